// PCRE2 (Debian's libpcre2-dev), the 8-bit library: schema patterns are matched by an engine
// whose work per match has a limit that holds, which Swift's backtracking `Regex` has not.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

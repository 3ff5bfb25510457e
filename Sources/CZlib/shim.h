#include <zlib.h>

// zlib's deflateInit is a macro, which Swift does not import: a stream that stores its input
// as it is (level 0), the way docsync writes git's loose objects.
static inline int docsync_deflate_init_stored(z_stream *stream) {
    stream->zalloc = Z_NULL;
    stream->zfree = Z_NULL;
    stream->opaque = Z_NULL;
    return deflateInit(stream, Z_NO_COMPRESSION);
}

#include <zlib.h>

// zlib's deflateInit is a macro, which Swift does not import: a stream that stores its input
// as it is (level 0), the way docsync writes git's loose objects.
static inline int docsync_deflate_init_stored(z_stream *stream) {
    stream->zalloc = Z_NULL;
    stream->zfree = Z_NULL;
    stream->opaque = Z_NULL;
    return deflateInit(stream, Z_NO_COMPRESSION);
}

// A stream that compresses at `level` (a pack's deltas, which are small and do compress).
static inline int docsync_deflate_init_level(z_stream *stream, int level) {
    stream->zalloc = Z_NULL;
    stream->zfree = Z_NULL;
    stream->opaque = Z_NULL;
    return deflateInit(stream, level);
}

// inflateInit is a macro too: a stream that reads a loose object's zlib frame.
static inline int docsync_inflate_init(z_stream *stream) {
    stream->zalloc = Z_NULL;
    stream->zfree = Z_NULL;
    stream->opaque = Z_NULL;
    stream->next_in = Z_NULL;
    stream->avail_in = 0;
    return inflateInit(stream);
}

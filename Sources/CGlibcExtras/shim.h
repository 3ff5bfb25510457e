#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <unistd.h>

// glibc calls the Glibc module does not export: malloc tuning (mallopt, from <malloc.h>), and
// renameat2 and syncfs, which glibc only declares under _GNU_SOURCE. The system call is made directly, so
// a glibc older than 2.28 does not matter; a kernel or filesystem without it answers EINVAL or
// ENOSYS and the caller falls back.

static const unsigned int docsync_rename_noreplace = 1;  // RENAME_NOREPLACE
static const unsigned int docsync_rename_exchange = 2;   // RENAME_EXCHANGE

static inline int docsync_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

// Flushes the whole file system holding `fd` (Linux 2.6.39; reports write-back errors since 5.8).
static inline int docsync_syncfs(int fd) {
    return (int)syscall(SYS_syncfs, fd);
}

// Copies between two descriptors inside the kernel (Linux 4.5; a reflink on btrfs and XFS).
// Answers EXDEV, EINVAL or ENOSYS where it cannot, and the caller copies through a buffer.
static inline long docsync_copy_file_range(int fd_in, int fd_out, unsigned long len) {
    return syscall(SYS_copy_file_range, fd_in, (void *)0, fd_out, (void *)0, len, 0);
}

// Starts write-back of a byte range of `fd` without waiting for it (Linux 2.6.17): a long
// download has its pages on their way to disk while later ones arrive, so the fsync that makes
// the whole file durable has little left to wait for. Durability still comes only from fsync.
static inline int docsync_start_writeback(int fd, long long offset, long long count) {
    return (int)syscall(SYS_sync_file_range, fd, offset, count, 2 /* SYNC_FILE_RANGE_WRITE */);
}

// A pipe whose two ends are close-on-exec from the start (pipe2, declared only under
// _GNU_SOURCE): a child another thread starts meanwhile cannot inherit them.
static inline int docsync_pipe_cloexec(int fds[2]) {
    return (int)syscall(SYS_pipe2, fds, O_CLOEXEC);
}

// glibc 2.34: a spawned child closes every descriptor from `from` up before it runs (declared
// only under _GNU_SOURCE; the declaration is glibc's own).
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int docsync_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

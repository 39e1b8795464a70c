#include "util/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace paraplan::util {
namespace {

const char* type_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

std::string mib(std::uintmax_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string FileText::message(const std::string& path) const {
  const std::string p = "`" + path + "`";
  switch (status) {
    case Status::Ok: return {};
    case Status::CannotOpen: return "cannot open " + p + ": " + detail;
    case Status::NotRegular: return p + " is not a regular file (" + detail + ")";
    case Status::TooLarge: return p + " is " + detail + "; is it the right file?";
    case Status::ReadFailed: return "cannot read " + p + ": " + detail;
  }
  return {};
}

FileText read_regular_file(const std::string& path, std::uintmax_t max_bytes, const char* what) {
  FileText out;
  // O_NONBLOCK: opening a FIFO without a writer must not wait for one.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    const int err = errno;
    out.status = FileText::Status::CannotOpen;
    out.detail = err == ENOENT   ? "no such file"
                 : err == EACCES ? "permission denied"
                                 : std::strerror(err);
    return out;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    out.status = FileText::Status::ReadFailed;
    out.detail = std::strerror(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.status = FileText::Status::NotRegular;
    out.detail = type_of(st.st_mode);
    return out;
  }
  const std::string too_large = "larger than " + mib(max_bytes) + ", the limit for " + what;
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    out.status = FileText::Status::TooLarge;
    out.detail = too_large;
    return out;
  }
  // Read at most max_bytes + 1: a file that grows, or reports size 0 (/proc), stays bounded.
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.status = FileText::Status::ReadFailed;
      out.detail = std::strerror(errno);
      return out;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      out.status = FileText::Status::TooLarge;
      out.detail = too_large;
      return out;
    }
  }
  out.text = std::move(text);
  return out;
}

}  // namespace paraplan::util

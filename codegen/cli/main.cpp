// dg-codegen: renders a kernel template to stdout, to read or diff what NVRTC will compile.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dg/codegen/json.h"
#include "dg/codegen/template.h"
#include "dg_embedded.h"

namespace fs = std::filesystem;
using dg::codegen::Value;

namespace {

constexpr const char* kUsage =
    "Usage: dg-codegen --list\n"
    "       dg-codegen [--template-dir DIR] TEMPLATE [--context FILE] [--set KEY=VALUE]...\n"
    "                  [--set-str KEY=VALUE]...\n"
    "\n"
    "Renders kernels/TEMPLATE.cu.j2 (or TEMPLATE, a path under the template root) to stdout.\n"
    "\n"
    "  --list               print the kernel families (kernels/<family>.cu.j2), one per line\n"
    "  --template-dir DIR   read templates from DIR instead of the ones built into the library\n"
    "                       (default: $DG_TEMPLATE_DIR when set)\n"
    "  --context FILE       a JSON object with the template variables\n"
    "  --set KEY=VALUE      a variable: 123 is an int, 1.5 a float, true/false a bool,\n"
    "                       [a,b,...] a list of such values, anything else a string\n"
    "  --set-str KEY=VALUE  a string variable, whatever VALUE looks like\n"
    "  --help               this text\n"
    "  --version            the libdg version this dg-codegen comes with\n"
    "\n"
    "Exit status: 0 on success, 1 when a file cannot be read or rendering fails (FIFOs and\n"
    "other files that are not regular are refused), 2 on a usage error.\n";

struct UsageError {
  std::string message;
};
struct Failure {
  std::string message;
};

// The contents of the regular file at `path`; nullopt when nothing is there. Anything else there
// (a FIFO, which would block the read, a device, a directory) or a path that cannot be opened (a
// symlink loop, no permission) is a Failure naming `path` and the reason.
std::optional<std::string> read_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw Failure{"cannot open " + path + ": " + (errno == ELOOP ? "too many levels of symbolic links (a link loop?)"
                                                                  : std::strerror(errno))};
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw Failure{"cannot stat " + path + ": " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode))
    throw Failure{path + " is not a regular file (" +
                  (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or socket") + ")"};
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    else if (n == 0) break;
    else if (errno != EINTR) throw Failure{"cannot read " + path + ": " + std::strerror(errno)};
  }
  return out;
}

// Where templates come from: a directory on disk, or the files embedded in the library.
class TemplateRoot {
 public:
  explicit TemplateRoot(std::optional<fs::path> dir) : dir_(std::move(dir)) {}

  std::optional<std::string> read(const std::string& path) const {
    if (!dir_) {
      const dg::embedded::File* f = dg::embedded::find(path);
      if (f == nullptr) return std::nullopt;
      return std::string(f->data);
    }
    return read_regular_file((*dir_ / path).string());
  }

  // The kernel families; a Failure when a template directory has no readable kernels/ directory.
  std::vector<std::string> families() const {
    constexpr std::string_view kPrefix = "kernels/", kSuffix = ".cu.j2";
    std::vector<std::string> paths;
    if (!dir_) {
      for (const dg::embedded::File& f : dg::embedded::files()) paths.emplace_back(f.path);
    } else {
      const fs::path kernels = *dir_ / "kernels";
      std::error_code ec;
      const bool is_dir = fs::is_directory(kernels, ec);
      if (!is_dir) throw Failure{cannot_list(kernels, ec)};
      for (fs::directory_iterator it(kernels, ec), end; !ec && it != end; it.increment(ec))
        paths.push_back("kernels/" + it->path().filename().string());
      if (ec) throw Failure{cannot_list(kernels, ec)};
    }
    std::vector<std::string> names;
    for (const std::string& p : paths) {
      if (p.size() > kPrefix.size() + kSuffix.size() && p.compare(0, kPrefix.size(), kPrefix) == 0 &&
          p.compare(p.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0 &&
          p.find('/', kPrefix.size()) == std::string::npos)
        names.push_back(p.substr(kPrefix.size(), p.size() - kPrefix.size() - kSuffix.size()));
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string describe() const { return dir_ ? dir_->string() : "the embedded templates"; }

 private:
  static std::string cannot_list(const fs::path& kernels, const std::error_code& ec) {
    const char* loop = "too many levels of symbolic links (a link loop?)";
    const std::string why = !ec                                              ? "it is not a directory"
                            : ec == std::errc::too_many_symbolic_link_levels ? loop
                            : ec == std::errc::no_such_file_or_directory     ? "it does not exist"
                                                                              : ec.message();
    return "cannot list " + kernels.string() + ": " + why +
           " (expected a template directory holding kernels/<family>.cu.j2)";
  }

  std::optional<fs::path> dir_;
};

bool is_int(const std::string& s) {
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

Value parse_scalar(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  if (is_int(s)) {
    errno = 0;
    const long long i = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE) throw UsageError{"integer out of range: " + s};
    return i;
  }
  if (!s.empty() && s.find_first_of(".eE") != std::string::npos &&
      s.find_first_not_of("0123456789+-.eE") == std::string::npos) {
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size()) return d;
  }
  return s;
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// --set values: scalars, or a flat list "[1,2,3]".
Value parse_set_value(const std::string& s) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return parse_scalar(s);
  Value list = Value::list();
  const std::string body = s.substr(1, s.size() - 2);
  if (trim(body).empty()) return list;
  std::stringstream items(body);
  for (std::string item; std::getline(items, item, ',');) list.push_back(parse_scalar(trim(item)));
  if (body.back() == ',') list.push_back(parse_scalar(""));
  return list;
}

std::pair<std::string, std::string> split_assignment(const std::string& flag, const std::string& arg) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError{flag + " expects KEY=VALUE, got '" + arg + "'"};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::string read_file(const std::string& path) {
  std::optional<std::string> text = read_regular_file(path);
  if (!text) throw Failure{"cannot read " + path + ": no such file"};
  return std::move(*text);
}

int run(int argc, char** argv) {
  std::optional<fs::path> template_dir;
  if (const char* env = std::getenv("DG_TEMPLATE_DIR"); env != nullptr && *env != '\0') template_dir = env;
  bool list = false;
  std::optional<std::string> name;
  Value context = Value::map();
  std::vector<std::pair<std::string, Value>> sets;  // applied over --context

  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto operand = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{arg + " needs an argument"};
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--version") {
      std::cout << "dg-codegen (libdg) " << DG_TOOL_VERSION << '\n';
      return 0;
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--template-dir") {
      template_dir = operand();
    } else if (arg == "--context") {
      const std::string path = operand();
      try {
        context = dg::codegen::parse_json(read_file(path), path);
      } catch (const std::invalid_argument& e) {
        throw Failure{e.what()};
      }
      if (!context.is_map()) throw Failure{path + ": the context must be a JSON object"};
    } else if (arg == "--set" || arg == "--set-str") {
      auto [key, value] = split_assignment(arg, operand());
      sets.emplace_back(key, arg == "--set" ? parse_set_value(value) : Value(value));
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError{"unknown option " + arg};
    } else if (name) {
      throw UsageError{"more than one template given: " + *name + ", " + arg};
    } else {
      name = arg;
    }
  }

  const TemplateRoot root(template_dir);
  if (list) {
    if (name) throw UsageError{"--list takes no template"};
    for (const std::string& family : root.families()) std::cout << family << '\n';
    return 0;
  }
  if (!name) throw UsageError{"no template given"};
  for (auto& [key, value] : sets) context[key] = std::move(value);

  // "gemm" means kernels/gemm.cu.j2; a name ending in .j2 is a path under the root.
  std::vector<std::string> candidates;
  const bool is_path = name->size() > 3 && name->compare(name->size() - 3, 3, ".j2") == 0;
  if (!is_path) candidates.push_back("kernels/" + *name + ".cu.j2");
  candidates.push_back(*name);
  for (const std::string& path : candidates) {
    if (std::optional<std::string> source = root.read(path)) {
      const std::string out = dg::codegen::render(*source, path, context);
      std::fwrite(out.data(), 1, out.size(), stdout);
      return std::fflush(stdout) == 0 ? 0 : 1;
    }
  }
  throw Failure{"no template '" + *name + "' in " + root.describe() + " (tried " + candidates.front() +
                (candidates.size() > 1 ? ", " + candidates.back() : "") + ")"};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "dg-codegen: " << e.message << "\n\n" << kUsage;
    return 2;
  } catch (const Failure& e) {
    std::cerr << "dg-codegen: " << e.message << '\n';
    return 1;
  } catch (const std::exception& e) {  // TemplateError carries its own location and caret
    std::cerr << e.what() << '\n';
    return 1;
  }
}

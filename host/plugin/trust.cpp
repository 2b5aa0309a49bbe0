#include "plugin/trust.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace exactly::plugin {

namespace {

struct Mapped {
  void* p = MAP_FAILED;
  size_t n = 0;
  ~Mapped() {
    if (p != MAP_FAILED) munmap(p, n);
  }
};

template <typename Ehdr, typename Shdr, typename Sym>
bool find_symbol(const char* base, size_t size, const std::string& symbol, std::string* why) {
  auto in = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  const auto* eh = reinterpret_cast<const Ehdr*>(base);
  if (!in(eh->e_shoff, uint64_t(eh->e_shnum) * sizeof(Shdr)) || eh->e_shentsize != sizeof(Shdr)) {
    *why = "malformed ELF section table";
    return false;
  }
  const auto* sh = reinterpret_cast<const Shdr*>(base + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_DYNSYM) continue;
    if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Sym) ||
        !in(sh[i].sh_offset, sh[i].sh_size)) {
      *why = "malformed ELF dynamic symbol table";
      return false;
    }
    const Shdr& strtab = sh[sh[i].sh_link];
    if (!in(strtab.sh_offset, strtab.sh_size)) {
      *why = "malformed ELF string table";
      return false;
    }
    const char* names = base + strtab.sh_offset;
    const auto* syms = reinterpret_cast<const Sym*>(base + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(Sym); ++k) {
      if (syms[k].st_name >= strtab.sh_size || syms[k].st_shndx == SHN_UNDEF) continue;
      const char* name = names + syms[k].st_name;
      size_t max = strtab.sh_size - syms[k].st_name;
      if (strnlen(name, max) == symbol.size() && std::memcmp(name, symbol.data(), symbol.size()) == 0)
        return true;
    }
  }
  return false;
}

}  // namespace

bool exports_symbol(const std::string& path, const std::string& symbol, std::string* why) {
  why->clear();
  // O_NONBLOCK: a FIFO named *.so would block the open until someone wrote to it, and
  // with it validate, plugins and run.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = fmt::format("cannot open: {}", std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    close(fd);
    *why = fmt::format("not a regular file ({})", S_ISFIFO(st.st_mode)   ? "a FIFO"
                                                  : S_ISCHR(st.st_mode) ? "a character device"
                                                  : S_ISBLK(st.st_mode) ? "a block device"
                                                  : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : S_ISDIR(st.st_mode)  ? "a directory"
                                                                         : "not a file");
    return false;
  }
  Mapped m;
  if (st.st_size >= static_cast<off_t>(EI_NIDENT)) {
    m.n = static_cast<size_t>(st.st_size);
    m.p = mmap(nullptr, m.n, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (m.p == MAP_FAILED) {
    *why = "not an ELF shared library (unreadable or too small)";
    return false;
  }
  const auto* base = static_cast<const char*>(m.p);
  if (std::memcmp(base, ELFMAG, SELFMAG) != 0) {
    *why = "not an ELF shared library";
    return false;
  }
  if (base[EI_CLASS] == ELFCLASS64 && m.n >= sizeof(Elf64_Ehdr))
    return find_symbol<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym>(base, m.n, symbol, why);
  if (base[EI_CLASS] == ELFCLASS32 && m.n >= sizeof(Elf32_Ehdr))
    return find_symbol<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym>(base, m.n, symbol, why);
  *why = "unknown ELF class";
  return false;
}

std::string untrusted_reason(const std::string& path, bool is_dir) {
  if (path.empty())
    return "an empty plugin directory entry (an empty EXACTLY_PLUGIN_PATH element means the "
           "current directory); remove it or name the directory";
  if (!std::filesystem::path(path).is_absolute())
    return fmt::format("relative plugin directory '{}' depends on the working directory; use an "
                       "absolute path", path);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";  // missing: nothing will be loaded from it
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("{} '{}' is writable by {} (mode {:o}): anyone who can write there could "
                       "plant code the host runs. Fix: chmod go-w '{}', or set plugin.insecure: "
                       "true to load it anyway",
                       is_dir ? "plugin directory" : "plugin file", path,
                       (st.st_mode & S_IWOTH) ? "every user" : "its group", st.st_mode & 07777, path);
  // The directories that really hold it (symlinks resolved), up to /: whoever can write
  // one of them can rename what is below it away and put their own in its place. A
  // sticky one (/tmp) lets nobody move another user's entries, so it passes.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return "";
  for (std::filesystem::path d = real.parent_path();; d = d.parent_path()) {
    struct stat ds {};
    if (stat(d.c_str(), &ds) == 0 && (ds.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
        (ds.st_mode & S_ISVTX) == 0)
      return fmt::format("{} '{}'{} is inside '{}', which is writable by {} (mode {:o}) without the "
                         "sticky bit: anyone who can write there could put their own code in its "
                         "place. Fix: chmod go-w '{}', or set plugin.insecure: true to load it anyway",
                         is_dir ? "plugin directory" : "plugin file", path,
                         real.string() == path ? "" : " (" + real.string() + ")", d.string(),
                         (ds.st_mode & S_IWOTH) ? "every user" : "its group", ds.st_mode & 07777,
                         d.string());
    if (d == d.root_path() || d.empty()) break;
  }
  return "";
}

}  // namespace exactly::plugin

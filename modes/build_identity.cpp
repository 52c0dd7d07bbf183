#include "build_identity.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstdio>

namespace csrun::modes {

namespace {

constexpr std::size_t align4(std::size_t size) {
  return (size + 3) & ~std::size_t{3};
}

// The NT_GNU_BUILD_ID note in one PT_NOTE segment, as hex.
std::string build_id_in(const std::uint8_t* notes, std::size_t size) {
  std::size_t offset = 0;
  while (offset + sizeof(ElfW(Nhdr)) <= size) {
    const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(notes + offset);
    std::size_t name_at = offset + sizeof(ElfW(Nhdr));
    std::size_t description_at = name_at + align4(header->n_namesz);
    std::size_t next = description_at + align4(header->n_descsz);
    if (next > size) return "";
    if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
        std::string_view(reinterpret_cast<const char*>(notes + name_at), 3) == "GNU") {
      std::string hex;
      for (std::size_t index = 0; index < header->n_descsz; ++index) {
        char digits[3];
        std::snprintf(digits, sizeof digits, "%02x", notes[description_at + index]);
        hex += digits;
      }
      return hex;
    }
    offset = next;
  }
  return "";
}

// dl_iterate_phdr visits the executable first.
int read_main_program(dl_phdr_info* info, std::size_t, void* found) {
  for (ElfW(Half) index = 0; index < info->dlpi_phnum; ++index) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[index];
    if (segment.p_type != PT_NOTE) continue;
    const auto* notes = reinterpret_cast<const std::uint8_t*>(info->dlpi_addr + segment.p_vaddr);
    std::string id = build_id_in(notes, segment.p_memsz);
    if (!id.empty()) {
      *static_cast<std::string*>(found) = id;
      break;
    }
  }
  return 1;
}

}  // namespace

const std::string& executable_build_id() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(read_main_program, &found);
    return found;
  }();
  return id;
}

}  // namespace csrun::modes

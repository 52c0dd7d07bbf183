// The plan decoder on arbitrary payloads behind a valid header: what csrun makes of a plan file
// whose checksum matches but whose contents are not a plan this csrun wrote (a damaged file whose
// checksum collides, a build with a format change but not its version). A PlanFormatError naming
// the file, or a plan; the header's own checks are the unit tests'. The seed is fc_mnist's plan
// without its 36-byte header (`tail -c +37 plan.bin`): after a change of the plan format it still
// seeds the decoder, if less deeply, until it is made again.

#include "compiler/plan_format.hpp"
#include "scratch_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes = csrun::compiler::with_plan_header(csrun::fuzz::as_text(data, size));
  try {
    csrun::compiler::decode_plan(bytes, "plan.bin");
  } catch (const csrun::compiler::PlanFormatError&) {
  }
  return 0;
}

/* fuzz_cfi.c: libFuzzer target for the CFI parser and evaluator
 * (unwind/cfi.c), the code that reads unwind tables inside the profiling
 * signal handler.
 *
 * The first byte picks what the rest is. Even: one unwind segment that
 * starts with its .eh_frame_hdr (the first byte, halved, times 16, is the
 * header's size); every table entry's address, and addresses around it, are looked
 * up and each row's expressions evaluated over memory that is the segment
 * itself. Odd: one DWARF expression. Inputs are copied into blocks of their
 * exact size, so AddressSanitizer sees any read past them.
 *
 * Every input goes through two parsers: this machine's (x86-64: 17
 * registers, return address column 16) and arm64's (cfi_aarch64.c: 33
 * registers, return address column 30, DW_CFA_AARCH64_negate_ra_state,
 * DW_OP_breg up to 31), so arm64's rules are fuzzed on this machine too.
 * corpus/cfi/seg_arm64_pac is an arm64 object's tables (.eh_frame_hdr and
 * .eh_frame of a small program built with -mbranch-protection=standard,
 * so its rows carry negate_ra_state).
 */
#define _GNU_SOURCE
#include "cfi.h"
#include "cfi_driver.h"

/* cfi_aarch64.c: the same run over arm64's rules. */
void fuzz_cfi_aarch64(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_cfi_run(data, size);
    fuzz_cfi_aarch64(data, size);
    return 0;
}

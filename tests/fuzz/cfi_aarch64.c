/* cfi_aarch64.c: a second copy of unwind/cfi.c for the CFI fuzz target,
 * compiled with arm64's register numbering and rules (PP_ARCH_FORCE_AARCH64:
 * arch/arch_aarch64.h's numbering without its arm64 code) whatever the
 * machine, its functions renamed so that they sit beside the library's.
 */
#define PP_ARCH_FORCE_AARCH64
#define pp_cfi_table_init pp_cfi_a64_table_init
#define pp_cfi_find pp_cfi_a64_find
#define pp_cfi_eval pp_cfi_a64_eval
#include "unwind/cfi.c"
#include "cfi_driver.h"

void fuzz_cfi_aarch64(const uint8_t *data, size_t size);

void fuzz_cfi_aarch64(const uint8_t *data, size_t size)
{
    _Static_assert(PP_CFI_REGS == 33 && PP_REG_RA == 30, "arm64's numbering");
    fuzz_cfi_run(data, size);
}

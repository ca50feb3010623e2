/* Loaded by LD_PRELOAD (benchmarks/avx2_only.py): the process sees an AVX2-only x86 CPU in CPUID.
 *
 * Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, 0; the "cpuid_fault" flag) makes every CPUID
 * instruction of this process, and of the threads and children it starts until an execve, raise SIGSEGV.
 * The handler runs the real CPUID, clears the AVX-512, AVX-VNNI and AMX bits of leaf 7 (the instruction
 * sets an AMD Zen 3 or an Intel Haswell-to-Comet-Lake CPU lacks) and steps over the instruction.
 * oneDNN, XNNPACK (cpuinfo), ONNX Runtime's MLAS, OpenBLAS and numpy read CPUID to pick their kernels,
 * so they pick their AVX2 kernels, which then run at this CPU's clock and memory speed.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define BIT(n) (1u << (n))

/* Leaf 7, subleaf 0, EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL. */
static const unsigned LEAF7_EBX = BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31);
/* ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ. */
static const unsigned LEAF7_ECX = BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14);
/* EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX_BF16, AVX512_FP16, AMX_TILE, AMX_INT8. */
static const unsigned LEAF7_EDX = BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25);
/* Leaf 7, subleaf 1, EAX: AVX_VNNI, AVX512_BF16, AVX_IFMA; EDX: AVX_VNNI_INT8, AVX_NE_CONVERT, AMX_COMPLEX. */
static const unsigned LEAF7_1_EAX = BIT(4) | BIT(5) | BIT(23);
static const unsigned LEAF7_1_EDX = BIT(4) | BIT(5) | BIT(8);

static long cpuid_faulting(int off) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, off); }

static void on_cpuid(int signal_number, siginfo_t *info, void *context) {
    greg_t *registers = ((ucontext_t *)context)->uc_mcontext.gregs;
    const unsigned char *instruction = (const unsigned char *)registers[REG_RIP];
    (void)info;
    if (instruction[0] != 0x0f || instruction[1] != 0xa2) { /* a real segmentation fault */
        signal(signal_number, SIG_DFL);
        return;
    }
    unsigned leaf = (unsigned)registers[REG_RAX], subleaf = (unsigned)registers[REG_RCX], a, b, c, d;
    cpuid_faulting(1);
    __cpuid_count(leaf, subleaf, a, b, c, d);
    cpuid_faulting(0);
    if (leaf == 7 && subleaf == 0) {
        b &= ~LEAF7_EBX;
        c &= ~LEAF7_ECX;
        d &= ~LEAF7_EDX;
    } else if (leaf == 7 && subleaf == 1) {
        a &= ~LEAF7_1_EAX;
        d &= ~LEAF7_1_EDX;
    }
    registers[REG_RAX] = a;
    registers[REG_RBX] = b;
    registers[REG_RCX] = c;
    registers[REG_RDX] = d;
    registers[REG_RIP] += 2;
}

__attribute__((constructor)) static void mask_cpuid(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_cpuid;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    if (sigaction(SIGSEGV, &action, NULL) != 0 || cpuid_faulting(0) != 0) {
        static const char message[] = "avx2_only: CPUID faulting is not available here; nothing is masked\n";
        write(2, message, sizeof message - 1);
        _exit(3);
    }
}

/* A test device for Wine 8 only, never shipped: Rust's std (1.78+) takes its random numbers
 * from ProcessPrng in bcryptprimitives.dll, which Wine 8 does not have. This DLL provides that
 * one function over BCryptGenRandom, which Wine has. Windows itself ships the real DLL.
 * Built by scripts/cross-test.sh with mingw-w64 and put beside kubecred.exe. */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

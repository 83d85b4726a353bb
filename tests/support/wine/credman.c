/* A test device for scripts/cross-test.sh, never shipped: looks at Wine's Credential Manager
 * through its own API, the way a Windows user's `cmdkey /list` would (Wine has no cmdkey).
 *   credman list           prints the target name of every generic credential of kubecred
 *                          ("*.kubecred", the keyring crate's naming), one a line: kubecred
 *                          keeps its secrets in DPAPI-protected files, and must leave none here
 * Built by scripts/cross-test.sh with mingw-w64. */
#include <windows.h>
#include <wincred.h>
#include <stdio.h>
#include <string.h>

int wmain(int argc, wchar_t **argv) {
    if (argc == 2 && wcscmp(argv[1], L"list") == 0) {
        DWORD count = 0;
        PCREDENTIALW *found = NULL;
        /* A filter is a prefix only ("name*"): every credential, then the suffix here. */
        if (!CredEnumerateW(NULL, 0, &count, &found)) {
            if (GetLastError() == ERROR_NOT_FOUND) return 0;
            fprintf(stderr, "CredEnumerateW failed: %lu\n", GetLastError());
            return 1;
        }
        for (DWORD i = 0; i < count; i++) {
            const wchar_t *name = found[i]->TargetName;
            size_t length = wcslen(name), suffix = wcslen(L".kubecred");
            if (length >= suffix && wcscmp(name + length - suffix, L".kubecred") == 0) {
                printf("%ls\n", name);
            }
        }
        CredFree(found);
        return 0;
    }
    fprintf(stderr, "usage: credman list\n");
    return 2;
}

/* A test device for scripts/cross-test.sh, never shipped: looks at Wine's Credential Manager
 * through its own API, the way a Windows user's `cmdkey /list` would (Wine has no cmdkey).
 *   credman list           prints the target name of every generic credential of kubecred
 *                          ("*.kubecred", the keyring crate's naming), one a line
 *   credman plant TARGET FILE
 *                          writes a generic credential holding FILE's UTF-8 text as UTF-16, as
 *                          an older kubecred did (the keyring crate's way), to check that
 *                          kubecred still reads and removes such items
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
    if (argc == 4 && wcscmp(argv[1], L"plant") == 0) {
        static char text[2560];
        static wchar_t wide[1280];
        FILE *file = _wfopen(argv[3], L"rb");
        if (!file) {
            fprintf(stderr, "cannot open %ls\n", argv[3]);
            return 1;
        }
        size_t length = fread(text, 1, sizeof text, file);
        fclose(file);
        int units = MultiByteToWideChar(CP_UTF8, 0, text, (int)length, wide, 1280);
        if (units <= 0) {
            fprintf(stderr, "not UTF-8, or over 1280 characters: %ls\n", argv[3]);
            return 1;
        }
        CREDENTIALW credential = {0};
        credential.Type = CRED_TYPE_GENERIC;
        credential.TargetName = argv[2];
        credential.UserName = argv[2];
        credential.CredentialBlobSize = (DWORD)units * sizeof(wchar_t);
        credential.CredentialBlob = (LPBYTE)wide;
        credential.Persist = CRED_PERSIST_ENTERPRISE;
        if (!CredWriteW(&credential, 0)) {
            fprintf(stderr, "CredWriteW failed: %lu\n", GetLastError());
            return 1;
        }
        return 0;
    }
    fprintf(stderr, "usage: credman list | credman plant TARGET FILE\n");
    return 2;
}

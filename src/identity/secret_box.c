/* Token secrets at rest: AES-256-GCM under the data dir's identity.key.
 *
 * The server must recover a secret to verify S3 SigV4 signatures (an HMAC
 * keyed by it), so secrets cannot be stored as one-way hashes.  Each secret
 * is sealed with a fresh random 96-bit nonce; the token id is the associated
 * data, so a sealed secret copied onto another token's row fails to open.
 * Box layout: version (1) || nonce (12) || ciphertext || tag (16), stored as
 * hex TEXT (portable to every engine).
 *
 * identity.key holds 32 random bytes as 64 hex digits and a newline, mode
 * 0600.  It is created once, atomically (written to a unique temporary
 * name, fsynced, then link(2)ed into place so two processes starting at once
 * agree on one key), and the directory is fsynced.
 */
#include "identity_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cairn/crypto.h"
#include "cairn/util.h"

#define BOX_VERSION 1
static const char aad_prefix[] = "cairn-token-secret:v1:";

static cn_err_t key_read(const char *path, uint8_t key[CN__ID_KEY_LEN])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077))
        cn_warn("identity", "%s is readable by group or others (mode %03o); it should be 0600",
                path, (unsigned)(st.st_mode & 0777));
    char buf[130];
    long long n = cn_read_full(fd, buf, sizeof buf);
    close(fd);
    if (n < 0)
        return (cn_err_t)n;
    size_t len = (size_t)n;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
        len--;
    cn_err_t e = 0;
    if (len != 2 * CN__ID_KEY_LEN || cn_hex_decode(buf, len, key, CN__ID_KEY_LEN) < 0)
        e = CN_E_CORRUPT;
    OPENSSL_cleanse(buf, sizeof buf);
    return e;
}

static cn_err_t key_create(const char *path, const char *data_dir)
{
    uint8_t key[CN__ID_KEY_LEN];
    char text[2 * CN__ID_KEY_LEN + 2];
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return CN_E_INVALID;
    CN_TRY(cn_random_bytes(key, sizeof key));
    cn_hex_encode(key, sizeof key, text);
    text[2 * CN__ID_KEY_LEN] = '\n';
    text[2 * CN__ID_KEY_LEN + 1] = '\0';

    cn_err_t e = 0;
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        e = -errno;
        goto out;
    }
    e = cn_write_full(fd, text, 2 * CN__ID_KEY_LEN + 1);
    if (e == 0 && fsync(fd) != 0)
        e = -errno;
    close(fd);
    if (e == 0 && link(tmp, path) != 0 && errno != EEXIST)
        e = -errno; /* EEXIST: another process made it first; use theirs */
    unlink(tmp);
    if (e == 0)
        e = cn_fsync_dir(data_dir);
out:
    OPENSSL_cleanse(key, sizeof key);
    OPENSSL_cleanse(text, sizeof text);
    return e;
}

cn_err_t cn__id_key_load(const char *data_dir, uint8_t key[CN__ID_KEY_LEN])
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/identity.key", data_dir) >= sizeof path)
        return CN_E_INVALID;
    cn_err_t e = key_read(path, key);
    if (e != -ENOENT)
        return e;
    CN_TRY(key_create(path, data_dir));
    cn_info("identity", "created secret-encryption key %s", path);
    return key_read(path, key);
}

cn_err_t cn__id_key_load_file(const char *path, uint8_t key[CN__ID_KEY_LEN])
{
    return key_read(path, key);
}

static size_t aad_build(const char *token_id, char *aad, size_t cap)
{
    int n = snprintf(aad, cap, "%s%s", aad_prefix, token_id);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

cn_err_t cn__id_seal(const uint8_t key[CN__ID_KEY_LEN], const char *token_id, const uint8_t *secret,
                     size_t len, char *hex)
{
    uint8_t box[CN__ID_BOX_MAX];
    char aad[sizeof aad_prefix + CN_TOKEN_ID_MAX + 1];
    size_t aad_len = aad_build(token_id, aad, sizeof aad);
    if (!aad_len || len == 0 || len > CN_SECRET_MAX)
        return CN_E_INVALID;
    box[0] = BOX_VERSION;
    CN_TRY(cn_random_bytes(box + 1, CN__ID_NONCE_LEN));
    uint8_t *ct = box + 1 + CN__ID_NONCE_LEN;

    cn_err_t e = CN_E_INVALID;
    int outl = 0, fin = 0;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return -ENOMEM;
    if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, CN__ID_NONCE_LEN, NULL) == 1 &&
        EVP_EncryptInit_ex(c, NULL, NULL, key, box + 1) == 1 &&
        EVP_EncryptUpdate(c, NULL, &outl, (const uint8_t *)aad, (int)aad_len) == 1 &&
        EVP_EncryptUpdate(c, ct, &outl, secret, (int)len) == 1 &&
        EVP_EncryptFinal_ex(c, ct + outl, &fin) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, CN__ID_TAG_LEN, ct + len) == 1)
        e = 0;
    EVP_CIPHER_CTX_free(c);
    if (e == 0) {
        size_t n = 1 + CN__ID_NONCE_LEN + len + CN__ID_TAG_LEN;
        cn_hex_encode(box, n, hex);
        hex[2 * n] = '\0';
    }
    return e;
}

cn_err_t cn__id_box_decode(const char *hex, size_t hex_len, uint8_t *box, size_t *box_len)
{
    if (hex_len % 2 || hex_len / 2 > CN__ID_BOX_MAX ||
        hex_len / 2 < 1 + CN__ID_NONCE_LEN + 1 + CN__ID_TAG_LEN)
        return CN_E_CORRUPT;
    if (cn_hex_decode(hex, hex_len, box, hex_len / 2) < 0)
        return CN_E_CORRUPT;
    *box_len = hex_len / 2;
    return box[0] == BOX_VERSION ? 0 : CN_E_CORRUPT;
}

cn_err_t cn__id_open(const uint8_t key[CN__ID_KEY_LEN], const char *token_id, const uint8_t *box,
                     size_t box_len, uint8_t *secret, size_t *len)
{
    char aad[sizeof aad_prefix + CN_TOKEN_ID_MAX + 1];
    size_t aad_len = aad_build(token_id, aad, sizeof aad);
    if (!aad_len || box_len < 1 + CN__ID_NONCE_LEN + 1 + CN__ID_TAG_LEN ||
        box_len > CN__ID_BOX_MAX || box[0] != BOX_VERSION)
        return CN_E_CORRUPT;
    size_t ct_len = box_len - 1 - CN__ID_NONCE_LEN - CN__ID_TAG_LEN;
    const uint8_t *ct = box + 1 + CN__ID_NONCE_LEN;
    uint8_t tag[CN__ID_TAG_LEN];
    memcpy(tag, ct + ct_len, sizeof tag);

    cn_err_t e = CN_E_CORRUPT;
    int outl = 0, fin = 0;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return -ENOMEM;
    if (EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, CN__ID_NONCE_LEN, NULL) == 1 &&
        EVP_DecryptInit_ex(c, NULL, NULL, key, box + 1) == 1 &&
        EVP_DecryptUpdate(c, NULL, &outl, (const uint8_t *)aad, (int)aad_len) == 1 &&
        EVP_DecryptUpdate(c, secret, &outl, ct, (int)ct_len) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, CN__ID_TAG_LEN, tag) == 1 &&
        EVP_DecryptFinal_ex(c, secret + outl, &fin) == 1)
        e = 0;
    EVP_CIPHER_CTX_free(c);
    if (e == 0)
        *len = ct_len;
    else
        OPENSSL_cleanse(secret, ct_len);
    return e;
}

/* SCR1 frame headers, the opcode and error-code tables, the exact request
 * payload bounds, and the error payload. */
#include "codec_int.h"

#include <string.h>

cn_err_t cn_scribe_hdr_parse(const uint8_t p[CN_SCRIBE_HDR_LEN], cn_scribe_hdr_t *out)
{
    cn_rd_t r = cn_rd_init(p, CN_SCRIBE_HDR_LEN);
    const uint8_t *magic = cn_rd_bytes(&r, 4);
    out->opcode = cn_rd_u16le(&r);
    out->flags = cn_rd_u16le(&r);
    out->request_id = cn_rd_u64le(&r);
    out->length = cn_rd_u32le(&r);
    uint32_t reserved = cn_rd_u32le(&r);
    if (memcmp(magic, "SCR1", 4) != 0 ||
        (out->flags & ~(uint16_t)(CN_SCRIBE_FLAG_STREAM | CN_SCRIBE_FLAG_ERROR)) || reserved != 0 ||
        out->length > CN_SCRIBE_MAX_FRAME)
        return CN_E_PROTOCOL;
    return CN_OK;
}

void cn_scribe_hdr_encode(uint8_t out[CN_SCRIBE_HDR_LEN], const cn_scribe_hdr_t *h)
{
    memcpy(out, "SCR1", 4);
    out[4] = (uint8_t)h->opcode;
    out[5] = (uint8_t)(h->opcode >> 8);
    out[6] = (uint8_t)h->flags;
    out[7] = (uint8_t)(h->flags >> 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t)(h->request_id >> (8 * i));
    for (int i = 0; i < 4; i++)
        out[16 + i] = (uint8_t)(h->length >> (8 * i));
    memset(out + 20, 0, 4);
}

/* ---- opcode table ------------------------------------------------------------ */
static const char *const op_names[CN_SCRIBE_OP_LIMIT] = {
    [1] = "hello",
    [2] = "discover",
    [3] = "repo_create",
    [4] = "repo_info",
    [5] = "repo_list",
    [6] = "put_objects",
    [7] = "get_objects",
    [8] = "presence",
    [9] = "submit",
    [10] = "operation_outcome",
    [11] = "tree_page",
    [12] = "workspace_register",
    [13] = "changed_paths",
    [14] = "lock_acquire",
    [15] = "log",
    [16] = "lock_release",
    [17] = "lock_list",
    [20] = "branch_list",
    [21] = "branch_mutate",
    [22] = "branch_info",
    [23] = "branch_outcome",
    [24] = "merge_submit",
    [25] = "merge_read",
    [26] = "instance_status",
    [27] = "authorize_upload",
    [28] = "authorize_repo_create",
    [29] = "lock_policy",
    [30] = "get_chunks",
    [31] = "repository_mounts",
    [32] = "cherry_pick_info",
    [33] = "cherry_pick_submit",
    [34] = "workspace_list",
    [35] = "workspace_remove",
    [36] = "workspace_remove_outcome",
    [38] = "repo_usage",
    [39] = "describe_change",
    [40] = "change_notes",
    [41] = "change_note_history",
    [42] = "pin_objects",
    [43] = "tree_proof",
};

const char *cn_scribe_op_name(uint16_t opcode)
{
    return opcode < CN_SCRIBE_OP_LIMIT ? op_names[opcode] : NULL;
}

/* Exact request bounds of every laid-out opcode (docs/protocol/scribe.md,
 * "Request payload bounds"); each is the sum of the layout's maximal fields. */
#define B_STR(max) (2u + (max))
enum {
    B_HELLO2 = 2 + 1 + 4 + 8 + B_STR(CN_SCRIBE_MAX_CLIENT_STRING),
    B_HELLO4 = B_HELLO2 + 1 + B_STR(CN_SCRIBE_MAX_CERTIFICATE) + 32,
    B_REPO_CREATE = B_STR(CN_SCRIBE_MAX_REPO_NAME) + 1,
    B_REPO_INFO = 1 + B_STR(CN_SCRIBE_MAX_REPO_NAME),
    B_REPO_LIST = 4 + 1 + B_STR(CN_SCRIBE_MAX_TOKEN),
    B_PUT = 16 + 4 + 41 * CN_SCRIBE_MAX_BATCH,
    B_OBJS = 16 + 4 + 33 * CN_SCRIBE_MAX_BATCH,
    B_SUBMIT = 16 * 5 + 8 + 32 + 1 + B_STR(CN_SCRIBE_MAX_AUTHOR) + 4 + CN_SCRIBE_MAX_MESSAGE,
    B_OUTCOME = 32,
    B_TREE_PAGE = 16 + 16 + 8 + B_STR(CN_SCRIBE_MAX_PATH) + 4 + 1 + B_STR(CN_SCRIBE_MAX_PATH),
    B_CHANGED = 16 + 16 + 8 + 8 + B_STR(CN_SCRIBE_MAX_PATH) + 4 + 1 + B_STR(CN_SCRIBE_MAX_TOKEN),
    B_LOG = 16 + 16 + 1 + B_STR(CN_SCRIBE_MAX_PATH) + 1 + 1 + 1 + 8 + 1 + 8 + 1 +
            B_STR(CN_SCRIBE_MAX_PATH) + 4,
    B_INSTANCE = 1 + 16,
    B_AUTH_UPLOAD = 16,                                 /* 27: [16] repository */
    B_AUTH_CREATE = 1 + B_STR(CN_SCRIBE_MAX_NAMESPACE), /* 28: optional label */
    B_USAGE = 16,
    B_DESCRIBE = 16 + 8 + 4 + B_STR(CN_SCRIBE_MAX_AUTHOR) + 4 + CN_SCRIBE_MAX_NOTE_TEXT,
    B_NOTES = 16 + 4 + 8 * CN_SCRIBE_MAX_PAGE,
    B_HISTORY = 16 + 8 + 4 + 4,
    B_PIN = 16 * 3 + 4 + 33 * CN_SCRIBE_MAX_BATCH,
    B_BRANCH_LIST = 16 + 4 + 1 + B_STR(CN_SCRIBE_MAX_BRANCH_NAME),
    /* rename's expected name is longer than create's source and change */
    B_BRANCH_MUTATE =
        16 * 4 + B_STR(CN_SCRIBE_MAX_BRANCH_NAME) + 1 + B_STR(CN_SCRIBE_MAX_BRANCH_NAME),
    B_BRANCH_INFO = 16 + 1 + B_STR(CN_SCRIBE_MAX_BRANCH_NAME),
    B_MERGE_SUBMIT = 4 + B_SUBMIT + 8 + 16 + 8 + 16 + 8,
    /* tag 4 is the longest: two branch/revision pairs and 1,024 maximal paths */
    B_MERGE_READ =
        16 + 1 + 16 + 8 + 16 + 8 + 4 + CN_SCRIBE_MAX_MERGE_PATHS * B_STR(CN_SCRIBE_MAX_PATH),
    B_PICK_INFO = 16 * 3 + 8,
    B_PICK_SUBMIT = 4 + B_SUBMIT + 8 + 16 + 8,
    /* at most 10,000 paths of together at most 8 MiB */
    B_LOCK_PATHS = 4 + 2 * CN_SCRIBE_MAX_LOCK_PATHS + CN_SCRIBE_MAX_LOCK_BYTES,
    B_LOCK_ACQUIRE = 16 * 3 + B_LOCK_PATHS,
    B_LOCK_RELEASE = 16 * 2 + 1 + B_LOCK_PATHS,
    B_LOCK_LIST = 16 + B_STR(CN_SCRIBE_MAX_PATH) + 1 + 16 + 1 + B_STR(CN_SCRIBE_MAX_PATH) + 4,
    B_LOCK_POLICY = 16,
    B_WS_REGISTER = 16 * 3 + B_STR(CN_SCRIBE_MAX_WS_LABEL) + 2 +
                    CN_SCRIBE_MAX_WS_TAGS * B_STR(CN_SCRIBE_MAX_WS_TAG),
    B_WS_LIST = 16 + 1 + 1 + 16 + 4, /* 34-36: the specification's fixed sizes */
    B_WS_REMOVE = 16 * 4,
    B_WS_OUTCOME = 16 * 2,
    B_GET_CHUNKS = 16 + 4 + 64 * CN_SCRIBE_MAX_WITNESSES, /* 30: [32] chunk | [32] manifest */
    B_MOUNTS = 16 + 16 + 8,                               /* 31: the specification's 40 bytes */
};

bool cn_scribe_request_bound(uint16_t opcode, bool tls, uint32_t *bound)
{
    uint32_t b;
    switch (opcode) {
    case CN_SCRIBE_OP_HELLO: b = tls ? B_HELLO4 : B_HELLO2; break;
    case CN_SCRIBE_OP_DISCOVER: b = 0; break;
    case CN_SCRIBE_OP_REPO_CREATE: b = B_REPO_CREATE; break;
    case CN_SCRIBE_OP_REPO_INFO: b = B_REPO_INFO; break;
    case CN_SCRIBE_OP_REPO_LIST: b = B_REPO_LIST; break;
    case CN_SCRIBE_OP_PUT_OBJECTS: b = B_PUT; break;
    case CN_SCRIBE_OP_GET_OBJECTS:
    case CN_SCRIBE_OP_PRESENCE: b = B_OBJS; break;
    case CN_SCRIBE_OP_SUBMIT: b = B_SUBMIT; break;
    case CN_SCRIBE_OP_OPERATION_OUTCOME:
    case CN_SCRIBE_OP_BRANCH_OUTCOME: b = B_OUTCOME; break;
    case CN_SCRIBE_OP_TREE_PAGE: b = B_TREE_PAGE; break;
    case CN_SCRIBE_OP_TREE_PROOF: b = CN_SCRIBE_MAX_PROOF_REQ; break; /* 17.2 */
    case CN_SCRIBE_OP_CHANGED_PATHS: b = B_CHANGED; break;
    case CN_SCRIBE_OP_LOG: b = B_LOG; break;
    case CN_SCRIBE_OP_INSTANCE_STATUS: b = B_INSTANCE; break;
    case CN_SCRIBE_OP_AUTHORIZE_UPLOAD: b = B_AUTH_UPLOAD; break;
    case CN_SCRIBE_OP_AUTHORIZE_REPO_CREATE: b = B_AUTH_CREATE; break;
    case CN_SCRIBE_OP_REPO_USAGE: b = B_USAGE; break;
    case CN_SCRIBE_OP_DESCRIBE_CHANGE: b = B_DESCRIBE; break;
    case CN_SCRIBE_OP_CHANGE_NOTES: b = B_NOTES; break;
    case CN_SCRIBE_OP_CHANGE_NOTE_HISTORY: b = B_HISTORY; break;
    case CN_SCRIBE_OP_PIN_OBJECTS: b = B_PIN; break;
    case CN_SCRIBE_OP_BRANCH_LIST: b = B_BRANCH_LIST; break;
    case CN_SCRIBE_OP_BRANCH_MUTATE: b = B_BRANCH_MUTATE; break;
    case CN_SCRIBE_OP_BRANCH_INFO: b = B_BRANCH_INFO; break;
    case CN_SCRIBE_OP_MERGE_SUBMIT: b = B_MERGE_SUBMIT; break;
    case CN_SCRIBE_OP_MERGE_READ: b = B_MERGE_READ; break;
    case CN_SCRIBE_OP_CHERRY_PICK_INFO: b = B_PICK_INFO; break;
    case CN_SCRIBE_OP_CHERRY_PICK_SUBMIT: b = B_PICK_SUBMIT; break;
    case CN_SCRIBE_OP_LOCK_ACQUIRE: b = B_LOCK_ACQUIRE; break;
    case CN_SCRIBE_OP_LOCK_RELEASE: b = B_LOCK_RELEASE; break;
    case CN_SCRIBE_OP_LOCK_LIST: b = B_LOCK_LIST; break;
    case CN_SCRIBE_OP_LOCK_POLICY: b = B_LOCK_POLICY; break;
    case CN_SCRIBE_OP_WORKSPACE_REGISTER: b = B_WS_REGISTER; break;
    case CN_SCRIBE_OP_WORKSPACE_LIST: b = B_WS_LIST; break;
    case CN_SCRIBE_OP_WORKSPACE_REMOVE: b = B_WS_REMOVE; break;
    case CN_SCRIBE_OP_WORKSPACE_REMOVE_OUTCOME: b = B_WS_OUTCOME; break;
    case CN_SCRIBE_OP_GET_CHUNKS: b = B_GET_CHUNKS; break;
    case CN_SCRIBE_OP_REPOSITORY_MOUNTS: b = B_MOUNTS; break;
    default: return false;
    }
    if (bound)
        *bound = b;
    return true;
}

bool cn_scribe_op_is_core(uint16_t opcode)
{
    return cn_scribe_request_bound(opcode, false, NULL);
}

/* ---- error codes ----------------------------------------------------------------- */
static const struct {
    uint16_t code;
    const char *name;
} err_names[] = {
    { 1, "malformed" },
    { 2, "unsupported_version" },
    { 3, "unauthenticated" },
    { 4, "forbidden" },
    { 5, "internal" },
    { 6, "busy" },
    { 7, "auth_unavailable" },
    { 8, "limit_exceeded" },
    { 9, "unsupported_operation" },
    { 10, "storage_failure" },
    { 11, "corrupt" },
    { 12, "shutting_down" },
    { 100, "repository_not_found" },
    { 101, "branch_not_found" },
    { 102, "change_not_found" },
    { 103, "repository_exists" },
    { 104, "object_missing" },
    { 105, "object_invalid" },
    { 106, "workspace_mismatch" },
    { 107, "intent_finalized" },
    { 108, "path_conflict" },
    { 109, "workspace_retired" },
    { 110, "branch_exists" },
    { 111, "name_mismatch" },
    { 112, "change_not_pickable" },
    { 113, "schema_outdated" },
    { 200, "operation_intent_mismatch" },
    { 201, "incarnation_mismatch" },
    { 202, "base_conflict" },
    { 203, "base_mismatch" },
    { 204, "merge_incomplete" },
    { 205, "lock_required" },
    { 206, "lock_held" },
    { 207, "invalid_repository_config" },
    { 208, "already_applied" },
    { 212, "note_revision_stale" },
};

const char *cn_scribe_errcode_name(uint16_t code)
{
    for (size_t i = 0; i < sizeof err_names / sizeof err_names[0]; i++)
        if (err_names[i].code == code)
            return err_names[i].name;
    return NULL;
}

bool cn_scribe_errcode_is_client(uint16_t code)
{
    return (code >= 1 && code <= 4) || code == 8 || code == 9 || (code >= 100 && code <= 499);
}

/* ---- error payload: u16 code, str16 message (<= 4096) ---------------------------- */
cn_err_t cn_scribe_enc_error(cn_buf_t *out, cn_scribe_codec_t c, uint16_t code,
                             cn_scribe_str_t message)
{
    CN__ENC_BEGIN(out, c);
    CN__FAIL_IF(&w, code == 0);
    cn_scribe_wr_u16(&w, code);
    cn_scribe_wr_str16(&w, message, CN_SCRIBE_MAX_ERROR_MESSAGE);
    CN__ENC_END(out);
}

cn_err_t cn_scribe_dec_error(const uint8_t *p, size_t n, cn_scribe_codec_t c,
                             cn_scribe_error_t *out)
{
    cn_scribe_rd_t r = cn_scribe_rd_init(p, n, c);
    out->code = cn_scribe_rd_u16(&r);
    cn_scribe_rd_str16(&r, CN_SCRIBE_MAX_ERROR_MESSAGE, &out->message);
    if (!r.r.err && out->code == 0)
        cn__rd_fail(&r);
    return cn_scribe_rd_end(&r);
}

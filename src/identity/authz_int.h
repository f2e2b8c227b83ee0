/* Internals shared by the authz files (policy, ACL, decision).  Never
 * included from another module. */
#ifndef CN_AUTHZ_INT_H
#define CN_AUTHZ_INT_H

#include "cairn/authz.h"

/* A subject string made of up to two parts joined by one '/' (bucket, key),
 * so an object ARN can be matched without building it. */
typedef struct cn__subj {
    const char *a;
    size_t alen;
    const char *b; /* NULL = no second part and no '/' */
    size_t blen;
} cn__subj_t;

/* Wildcard match of pat (`*` any run, `?` one byte) against the subject;
 * icase folds ASCII case.  Iterative, O(len(pat) * len(subject)) worst case. */
bool cn__authz_glob(const char *pat, size_t plen, const cn__subj_t *s, bool icase);

/* Whether the action pattern pat (without "s3:"; `*` and `?` wildcards)
 * names at least one action Amazon S3 defines, ignoring case (s3_actions.c). */
bool cn__s3_action_known(const char *pat, size_t n);

/* Whether name is a valid account name (as identity spells them). */
bool cn__authz_name_ok(const char *name, size_t len);

/* What the bucket policy says about one request. */
typedef struct cn__peval {
    int deny_idx;  /* index of the first matching Deny statement, -1 none */
    int allow_idx; /* index of the first matching Allow statement, -1 none */
} cn__peval_t;

typedef struct cn__pctx {
    const cn_authz_req_t *req; /* principal, source, condition values */
    const char *action_name;   /* "s3:GetObject" */
    const char *bucket;
    const char *key;                 /* NULL for a bucket-level action */
    const cn_authz_object_t *object; /* existing-object tags; may be NULL */
    bool anonymous;                  /* evaluate as an anonymous caller */
} cn__pctx_t;

void cn__authz_policy_eval(const cn_authz_policy_t *p, const cn__pctx_t *c, cn__peval_t *out);

/* The Sid of statement idx ("" if it has none). */
const char *cn__authz_policy_sid(const cn_authz_policy_t *p, int idx, size_t *len);

#endif

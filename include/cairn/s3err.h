/* cairn s3err: S3's error codes (code, HTTP status, default message) and the
 * S3 XML error document.  The HTTP framework answers in them today (see
 * docs/protocol/http.md); the S3 adapter maps service failures onto them.
 * Pure data and encoding: never I/O. */
#ifndef CAIRN_S3ERR_H
#define CAIRN_S3ERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cairn/err.h"
#include "cairn/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * S3 error codes
 * ====================================================================== */

/* X(enum suffix, S3 code, HTTP status, default message) */
#define CN_S3_ERRORS(X)                                                                            \
    X(NONE, "", 200, "")                                                                           \
    X(ACCESS_DENIED, "AccessDenied", 403, "Access Denied")                                         \
    X(AUTH_HEADER_MALFORMED, "AuthorizationHeaderMalformed", 400,                                  \
      "The authorization header is malformed")                                                     \
    X(AUTH_QUERY_MALFORMED, "AuthorizationQueryParametersError", 400,                              \
      "The query-string authentication parameters are malformed")                                  \
    X(BAD_DIGEST, "BadDigest", 400,                                                                \
      "The Content-MD5 or checksum you specified did not match what we received")                  \
    X(BUCKET_ALREADY_EXISTS, "BucketAlreadyExists", 409,                                           \
      "The requested bucket name is not available")                                                \
    X(BUCKET_ALREADY_OWNED, "BucketAlreadyOwnedByYou", 409,                                        \
      "Your previous request to create the named bucket succeeded and you already own it")         \
    X(BUCKET_NOT_EMPTY, "BucketNotEmpty", 409, "The bucket you tried to delete is not empty")      \
    X(CONDITIONAL_CONFLICT, "ConditionalRequestConflict", 409,                                     \
      "A conflicting operation occurred; retry the request")                                       \
    X(ENTITY_TOO_SMALL, "EntityTooSmall", 400,                                                     \
      "Your proposed upload is smaller than the minimum allowed object size")                      \
    X(ENTITY_TOO_LARGE, "EntityTooLarge", 400,                                                     \
      "Your proposed upload exceeds the maximum allowed size")                                     \
    X(EXPECTATION_FAILED, "ExpectationFailed", 417, "The Expect header is not supported")          \
    X(INCOMPLETE_BODY, "IncompleteBody", 400,                                                      \
      "You did not provide the number of bytes specified by the Content-Length HTTP header")       \
    X(INTERNAL_ERROR, "InternalError", 500, "We encountered an internal error. Please try again.") \
    X(INVALID_ACCESS_KEY_ID, "InvalidAccessKeyId", 403,                                            \
      "The AWS access key Id you provided does not exist in our records.")                         \
    X(INVALID_ARGUMENT, "InvalidArgument", 400, "Invalid Argument")                                \
    X(INVALID_BUCKET_NAME, "InvalidBucketName", 400, "The specified bucket is not valid.")         \
    X(INVALID_DIGEST, "InvalidDigest", 400,                                                        \
      "The Content-MD5 or checksum you specified is not valid")                                    \
    X(INVALID_PART, "InvalidPart", 400, "One or more of the specified parts could not be found")   \
    X(INVALID_PART_ORDER, "InvalidPartOrder", 400, "The list of parts was not in ascending order") \
    X(INVALID_RANGE, "InvalidRange", 416, "The requested range is not satisfiable")                \
    X(INVALID_REQUEST, "InvalidRequest", 400, "Invalid Request")                                   \
    X(INVALID_URI, "InvalidURI", 400, "Couldn't parse the specified URI.")                         \
    X(INVALID_TAG, "InvalidTag", 400, "The tag provided was not a valid tag")                      \
    X(KEY_TOO_LONG, "KeyTooLongError", 400, "Your key is too long")                                \
    X(MALFORMED_XML, "MalformedXML", 400,                                                          \
      "The XML you provided was not well-formed or did not validate against our published schema") \
    X(MALFORMED_POLICY, "MalformedPolicy", 400, "Policies must be valid JSON")                     \
    X(METADATA_TOO_LARGE, "MetadataTooLarge", 400,                                                 \
      "Your metadata headers exceed the maximum allowed metadata size")                            \
    X(METHOD_NOT_ALLOWED, "MethodNotAllowed", 405,                                                 \
      "The specified method is not allowed against this resource.")                                \
    X(MISSING_CONTENT_LENGTH, "MissingContentLength", 411,                                         \
      "You must provide the Content-Length HTTP header.")                                          \
    X(MISSING_REQUEST_BODY, "MissingRequestBodyError", 400, "Request Body is empty")               \
    X(NO_SUCH_BUCKET, "NoSuchBucket", 404, "The specified bucket does not exist")                  \
    X(NO_SUCH_BUCKET_POLICY, "NoSuchBucketPolicy", 404, "The bucket policy does not exist")        \
    X(NO_SUCH_KEY, "NoSuchKey", 404, "The specified key does not exist.")                          \
    X(NO_SUCH_UPLOAD, "NoSuchUpload", 404, "The specified multipart upload does not exist.")       \
    X(NO_SUCH_VERSION, "NoSuchVersion", 404, "The specified version does not exist.")              \
    X(NO_SUCH_CORS, "NoSuchCORSConfiguration", 404, "The CORS configuration does not exist")       \
    X(NO_SUCH_TAG_SET, "NoSuchTagSet", 404, "The TagSet does not exist")                           \
    X(NO_SUCH_PUBLIC_ACCESS_BLOCK, "NoSuchPublicAccessBlockConfiguration", 404,                    \
      "The public access block configuration was not found")                                       \
    X(NOT_IMPLEMENTED, "NotImplemented", 501,                                                      \
      "A header or operation you provided implies functionality that this server does not offer")  \
    X(NOT_MODIFIED, "NotModified", 304, "Not Modified")                                            \
    X(PRECONDITION_FAILED, "PreconditionFailed", 412,                                              \
      "At least one of the preconditions you specified did not hold")                              \
    X(REQUEST_TIMEOUT, "RequestTimeout", 400,                                                      \
      "Your socket connection to the server was not read from or written to within the timeout "   \
      "period.")                                                                                   \
    X(REQUEST_TIME_TOO_SKEWED, "RequestTimeTooSkewed", 403,                                        \
      "The difference between the request time and the server's time is too large.")               \
    X(SIGNATURE_DOES_NOT_MATCH, "SignatureDoesNotMatch", 403,                                      \
      "The request signature we calculated does not match the signature you provided. "            \
      "Check your key and signing method.")                                                        \
    X(SERVICE_UNAVAILABLE, "ServiceUnavailable", 503, "Service is unable to handle request.")      \
    X(SLOW_DOWN, "SlowDown", 503, "Please reduce your request rate.")                              \
    X(UNRESOLVABLE_GRANT_BY_EMAIL, "UnresolvableGrantByEmailAddress", 400,                         \
      "The email address you provided does not match any account on record.")                      \
    X(CONTENT_SHA256_MISMATCH, "XAmzContentSHA256Mismatch", 400,                                   \
      "The provided 'x-amz-content-sha256' header does not match what was computed.")              \
    X(INVALID_CHUNK_SIZE, "InvalidChunkSizeError", 403,                                            \
      "Only the last chunk is allowed to have a size less than 8192 bytes")                        \
    X(MALFORMED_ACL, "MalformedACLError", 400,                                                     \
      "The XML you provided was not well-formed or did not validate against our published schema") \
    X(INVALID_BUCKET_STATE, "InvalidBucketState", 409,                                             \
      "The request is not valid with the current state of the bucket.")                            \
    X(INVALID_OBJECT_STATE, "InvalidObjectState", 403,                                             \
      "The operation is not valid for the current state of the object.")                           \
    X(EXPIRED_REQUEST, "AccessDenied", 403, "Request has expired")                                 \
    X(REQUEST_NOT_YET_VALID, "AccessDenied", 403, "Request is not valid yet")                      \
    X(TOO_MANY_BUCKETS, "TooManyBuckets", 400,                                                     \
      "You have attempted to create more buckets than allowed")                                    \
    X(INVALID_PART_NUMBER, "InvalidPartNumber", 416,                                               \
      "The requested partnumber is not satisfiable")                                               \
    X(UNEXPECTED_CONTENT, "UnexpectedContent", 400, "This request does not support content")       \
    X(MISSING_SECURITY_HEADER, "MissingSecurityHeader", 400,                                       \
      "Your request was missing a required header")                                                \
    X(INVALID_POLICY_DOCUMENT, "InvalidPolicyDocument", 400,                                       \
      "The content of the form does not meet the conditions specified in the policy document")     \
    X(MAX_POST_PRE_DATA, "MaxPostPreDataLengthExceededError", 400,                                 \
      "Your POST request fields preceding the upload file were too large")                         \
    X(MALFORMED_POST, "MalformedPOSTRequest", 400,                                                 \
      "The body of your POST request is not well-formed multipart/form-data")                      \
    X(POST_FILE_COUNT, "IncorrectNumberOfFilesInPostRequest", 400,                                 \
      "POST requires exactly one file upload per request")                                         \
    X(ACCESS_FORBIDDEN, "AccessForbidden", 403, "CORSResponse: This CORS request is not allowed.") \
    X(BAD_REQUEST, "BadRequest", 400, "Bad Request")                                               \
    X(HEADER_TOO_LARGE, "RequestHeaderSectionTooLarge", 400,                                       \
      "Your request header section exceeds the maximum allowed size.")                             \
    X(OBJECT_LOCK_CONFIG_NOT_FOUND, "ObjectLockConfigurationNotFoundError", 404,                   \
      "Object Lock configuration does not exist for this bucket")                                  \
    X(NO_SUCH_OBJECT_LOCK_CONFIG, "NoSuchObjectLockConfiguration", 404,                            \
      "The specified object does not have a ObjectLock configuration")                             \
    X(INVALID_RETENTION_PERIOD, "InvalidRetentionPeriod", 400,                                     \
      "Default retention period must be a positive integer value")                                 \
    X(NO_SUCH_LIFECYCLE, "NoSuchLifecycleConfiguration", 404,                                      \
      "The lifecycle configuration does not exist")

typedef enum cn_s3_err {
#define CN__S3_ENUM(e, code, status, msg) CN_S3E_##e,
    CN_S3_ERRORS(CN__S3_ENUM)
#undef CN__S3_ENUM
    CN_S3E_COUNT
} cn_s3_err_t;

/* The S3 code string ("NoSuchKey"), its HTTP status, and its default message.
 * An out-of-range value answers as InternalError.  Static strings; any thread. */
CN_API const char *cn_s3_err_code(cn_s3_err_t e);
CN_API int cn_s3_err_status(cn_s3_err_t e);
CN_API const char *cn_s3_err_message(cn_s3_err_t e);
/* Maps a cairn error value onto the S3 error that fits it best (NOT_FOUND →
 * NoSuchKey, DENIED → AccessDenied, DIGEST_MISMATCH → BadDigest, TOO_LARGE →
 * EntityTooLarge, RANGE → InvalidRange, PRECONDITION → PreconditionFailed,
 * anything unknown → InternalError): the HTTP framework's generic map, for its
 * own failures and a route without err_of.  An adapter maps its failures with
 * its own table (S3: cn_s3_err_from, cairn/s3.h), not with this. */
CN_API cn_s3_err_t cn_s3_err_from_cn(cn_err_t err);

/* Appends the S3 XML error document to out:
 *   <?xml ...?><Error><Code/><Message/><Resource/><RequestId/><HostId/></Error>
 * message NULL → the default message; resource / request_id / host_id may be
 * NULL (element omitted).  -ENOMEM only. */
CN_API cn_err_t cn_s3_error_xml(cn_buf_t *out, cn_s3_err_t e, const char *message,
                                const char *resource, const char *request_id, const char *host_id);

#ifdef __cplusplus
}
#endif
#endif

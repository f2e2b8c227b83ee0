/* The action names Amazon S3 defines for policies (the Service Authorization
 * Reference's "Actions defined by Amazon S3", without the "s3:" prefix), so
 * that a policy naming an action S3 does not have is refused as S3 refuses
 * it ("Policy has invalid action") instead of being stored and never matching.
 * Names only: what cairn enforces of them is the action table in
 * authz_decide.c. */
#include "identity/authz_int.h"

#include <string.h>

static const char *const names[] = {
    "AbortMultipartUpload", "AllowVendedLogDeliveryForResource",
    "AssociateAccessGrantsIdentityCenter", "BypassGovernanceRetention", "CreateAccessGrant",
    "CreateAccessGrantsInstance", "CreateAccessGrantsLocation", "CreateAccessPoint",
    "CreateAccessPointForObjectLambda", "CreateBucket", "CreateBucketMetadataTableConfiguration",
    "CreateJob", "CreateMultiRegionAccessPoint", "CreateStorageLensGroup", "DeleteAccessGrant",
    "DeleteAccessGrantsInstance", "DeleteAccessGrantsInstanceResourcePolicy",
    "DeleteAccessGrantsLocation", "DeleteAccessPoint", "DeleteAccessPointForObjectLambda",
    "DeleteAccessPointPolicy", "DeleteAccessPointPolicyForObjectLambda", "DeleteBucket",
    "DeleteBucketMetadataTableConfiguration", "DeleteBucketPolicy", "DeleteBucketWebsite",
    "DeleteJobTagging", "DeleteMultiRegionAccessPoint", "DeleteObject", "DeleteObjectAnnotation",
    "DeleteObjectTagging", "DeleteObjectVersion", "DeleteObjectVersionAnnotation",
    "DeleteObjectVersionTagging", "DeleteStorageLensConfiguration",
    "DeleteStorageLensConfigurationTagging", "DeleteStorageLensGroup", "DescribeJob",
    "DescribeMultiRegionAccessPointOperation", "DissociateAccessGrantsIdentityCenter",
    "GetAccelerateConfiguration", "GetAccessGrant", "GetAccessGrantsInstance",
    "GetAccessGrantsInstanceForPrefix", "GetAccessGrantsInstanceResourcePolicy",
    "GetAccessGrantsLocation", "GetAccessPoint", "GetAccessPointConfigurationForObjectLambda",
    "GetAccessPointForObjectLambda", "GetAccessPointPolicy",
    "GetAccessPointPolicyForObjectLambda", "GetAccessPointPolicyStatus",
    "GetAccessPointPolicyStatusForObjectLambda", "GetAccountPublicAccessBlock",
    "GetAnalyticsConfiguration", "GetBucketAbac", "GetBucketAcl", "GetBucketCORS",
    "GetBucketLocation", "GetBucketLogging", "GetBucketMetadataTableConfiguration",
    "GetBucketNotification", "GetBucketObjectLockConfiguration", "GetBucketOwnershipControls",
    "GetBucketPolicy", "GetBucketPolicyStatus", "GetBucketPublicAccessBlock",
    "GetBucketRequestPayment", "GetBucketTagging", "GetBucketVersioning", "GetBucketWebsite",
    "GetDataAccess", "GetEncryptionConfiguration", "GetIntelligentTieringConfiguration",
    "GetInventoryConfiguration", "GetJobTagging", "GetLifecycleConfiguration",
    "GetMetricsConfiguration", "GetMultiRegionAccessPoint", "GetMultiRegionAccessPointPolicy",
    "GetMultiRegionAccessPointPolicyStatus", "GetMultiRegionAccessPointRoutes", "GetObject",
    "GetObjectAcl", "GetObjectAnnotation", "GetObjectAttributes", "GetObjectLegalHold",
    "GetObjectRetention", "GetObjectTagging", "GetObjectTorrent", "GetObjectVersion",
    "GetObjectVersionAcl", "GetObjectVersionAnnotation",
    "GetObjectVersionAnnotationForReplication", "GetObjectVersionAttributes",
    "GetObjectVersionForReplication", "GetObjectVersionTagging", "GetObjectVersionTorrent",
    "GetReplicationConfiguration", "GetStorageLensConfiguration",
    "GetStorageLensConfigurationTagging", "GetStorageLensDashboard", "GetStorageLensGroup",
    "InitiateReplication", "ListAccessGrants", "ListAccessGrantsInstances",
    "ListAccessGrantsLocations", "ListAccessPoints", "ListAccessPointsForObjectLambda",
    "ListAllMyBuckets", "ListBucket", "ListBucketMultipartUploads", "ListBucketVersions",
    "ListCallerAccessGrants", "ListJobs", "ListMultiRegionAccessPoints",
    "ListMultipartUploadParts", "ListObjectAnnotations", "ListObjectVersionAnnotations",
    "ListStorageLensConfigurations", "ListStorageLensGroups", "ListTagsForResource",
    "ObjectOwnerOverrideToBucketOwner", "PauseReplication", "PutAccelerateConfiguration",
    "PutAccessGrantsInstanceResourcePolicy", "PutAccessPointConfigurationForObjectLambda",
    "PutAccessPointPolicy", "PutAccessPointPolicyForObjectLambda",
    "PutAccessPointPublicAccessBlock", "PutAccountPublicAccessBlock", "PutAnalyticsConfiguration",
    "PutBucketAbac", "PutBucketAcl", "PutBucketCORS", "PutBucketLogging", "PutBucketNotification",
    "PutBucketObjectLockConfiguration", "PutBucketOwnershipControls", "PutBucketPolicy",
    "PutBucketPublicAccessBlock", "PutBucketRequestPayment", "PutBucketTagging",
    "PutBucketVersioning", "PutBucketWebsite", "PutEncryptionConfiguration",
    "PutIntelligentTieringConfiguration", "PutInventoryConfiguration", "PutJobTagging",
    "PutLifecycleConfiguration", "PutMetricsConfiguration", "PutMultiRegionAccessPointPolicy",
    "PutObject", "PutObjectAcl", "PutObjectAnnotation", "PutObjectLegalHold",
    "PutObjectRetention", "PutObjectTagging", "PutObjectVersionAcl", "PutObjectVersionAnnotation",
    "PutObjectVersionTagging", "PutReplicationConfiguration", "PutStorageLensConfiguration",
    "PutStorageLensConfigurationTagging", "ReplicateDelete", "ReplicateObject",
    "ReplicateObjectAnnotation", "ReplicateTags", "RestoreObject",
    "SubmitMultiRegionAccessPointRoutes", "TagResource", "UntagResource",
    "UpdateAccessGrantsLocation", "UpdateBucketMetadataAnnotationTableConfiguration",
    "UpdateBucketMetadataInventoryTableConfiguration",
    "UpdateBucketMetadataJournalTableConfiguration", "UpdateJobPriority", "UpdateJobStatus",
    "UpdateObjectEncryption", "UpdateStorageLensGroup",
};

#define NNAMES (sizeof names / sizeof names[0])

bool cn__s3_action_known(const char *pat, size_t n)
{
    for (size_t i = 0; i < NNAMES; i++) {
        cn__subj_t subj = {names[i], strlen(names[i]), NULL, 0};
        if (cn__authz_glob(pat, n, &subj, true))
            return true;
    }
    return false;
}

/**
 * @module gateways/s3/multipart
 * S3 multipart uploads over any storage: uploads.ts (the operations, records, Complete,
 * expiry), staging.ts (parts on disk), route.ts (the query forms of the REST API),
 * xml.ts (the XML documents). docs/s3-gateway.md, "Multipart uploads".
 */
export { MAX_PART_BYTES, MAX_PART_NUMBER, MIN_PART_BYTES, MultipartUploads, objectPath, type MultipartCaller, type MultipartOptions } from './uploads.js'
export { multipartRoute } from './route.js'

/**
 * @module gateways/s3/errors
 * An S3 error: the code, message and HTTP status S3 itself answers with
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html). Everything
 * the S3 gateway refuses is thrown as one of these and rendered as S3's XML error
 * document in one place.
 */
export class S3Error extends Error {
  constructor(
    /** e.g. `NoSuchKey`, `SignatureDoesNotMatch`. */
    readonly code: string,
    message: string,
    readonly status: number,
    /** Extra elements of the error document (e.g. `Key`, `BucketName`). */
    readonly extra: Readonly<Record<string, string>> = {},
  ) {
    super(message)
    this.name = 'S3Error'
  }
}

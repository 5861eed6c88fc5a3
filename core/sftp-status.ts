/**
 * @module core/sftp-status
 * SFTP version 3's status codes (draft-ietf-secsh-filexfer-02, section 7), each with the
 * text an answer carries when it has no message of its own. One table for both ends
 * filegate speaks SFTP at: the SFTP gateway answers with these (gateways/sftp/), and the
 * SFTP driver reads them from a server (workers/drivers/sftp/errors.ts).
 */

export const SFTP_STATUS = {
  OK: 0,
  EOF: 1,
  NO_SUCH_FILE: 2,
  PERMISSION_DENIED: 3,
  FAILURE: 4,
  BAD_MESSAGE: 5,
  NO_CONNECTION: 6,
  CONNECTION_LOST: 7,
  OP_UNSUPPORTED: 8,
} as const

export type SftpStatusCode = (typeof SFTP_STATUS)[keyof typeof SFTP_STATUS]

/** The default text of each code (what OpenSSH's sftp-server sends). */
export const SFTP_STATUS_TEXT: Readonly<Record<SftpStatusCode, string>> = {
  [SFTP_STATUS.OK]: 'Success',
  [SFTP_STATUS.EOF]: 'End of file',
  [SFTP_STATUS.NO_SUCH_FILE]: 'No such file',
  [SFTP_STATUS.PERMISSION_DENIED]: 'Permission denied',
  [SFTP_STATUS.FAILURE]: 'Failure',
  [SFTP_STATUS.BAD_MESSAGE]: 'Bad message',
  [SFTP_STATUS.NO_CONNECTION]: 'No connection',
  [SFTP_STATUS.CONNECTION_LOST]: 'Connection lost',
  [SFTP_STATUS.OP_UNSUPPORTED]: 'Operation unsupported',
}

/** Each code's name where a number would not say it (the metrics' error label). */
export const SFTP_STATUS_NAME: Readonly<Record<SftpStatusCode, string>> = {
  [SFTP_STATUS.OK]: 'ok',
  [SFTP_STATUS.EOF]: 'eof',
  [SFTP_STATUS.NO_SUCH_FILE]: 'no_such_file',
  [SFTP_STATUS.PERMISSION_DENIED]: 'permission_denied',
  [SFTP_STATUS.FAILURE]: 'failure',
  [SFTP_STATUS.BAD_MESSAGE]: 'bad_message',
  [SFTP_STATUS.NO_CONNECTION]: 'no_connection',
  [SFTP_STATUS.CONNECTION_LOST]: 'connection_lost',
  [SFTP_STATUS.OP_UNSUPPORTED]: 'op_unsupported',
}

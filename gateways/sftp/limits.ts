/**
 * @module gateways/sftp/limits
 * What one SFTP session may ask, as sshd's sftp-server allows, and as the gateway tells
 * clients through limits@openssh.com (OpenSSH's `sftp` then reads and writes 255 KiB per
 * request instead of 32 KiB).
 */

/** The largest SFTP packet accepted, without its length field; a longer one closes the channel. */
export const MAX_PACKET = 256 * 1024
/** The most bytes one READ answers (a client asking more gets a short read and asks again). */
export const MAX_READ = MAX_PACKET - 1024
/** The most bytes one WRITE carries (a larger one does not fit in `MAX_PACKET`). */
export const MAX_WRITE = MAX_PACKET - 1024
/** Open handles one session may hold. */
export const MAX_HANDLES = 256

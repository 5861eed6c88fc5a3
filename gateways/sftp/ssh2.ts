/**
 * @module gateways/sftp/ssh2
 * ssh2 is CommonJS: its classes and helpers come through its default export under ESM.
 */
import ssh2 from 'ssh2'

export const { Server, utils } = ssh2

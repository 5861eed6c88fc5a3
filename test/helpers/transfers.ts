/**
 * Test helpers for transfers as a client sees them: the entry names of a zip, a
 * download read until it ends or is cut, and an upload whose server goes away.
 */
import { randomBytes } from 'node:crypto'
import yauzl from 'yauzl'

const MiB = 1024 * 1024

/** The entry names of a zip archive, read by yauzl (an independent reader). */
export function zipEntryNames(buf: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err)
      const names: string[] = []
      zip.on('entry', (e: yauzl.Entry) => {
        names.push(e.fileName)
        zip.readEntry()
      })
      zip.on('end', () => resolve(names))
      zip.on('error', reject)
      zip.readEntry()
    })
  })
}

/** Reads a response body to its end: `cut` when the connection broke instead. */
export async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, already = 0): Promise<{ cut: boolean; bytes: number }> {
  let bytes = already
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { cut: false, bytes }
      bytes += value.length
    }
  } catch {
    return { cut: true, bytes }
  }
}

/**
 * An upload body of random MiB chunks (up to `total`) that calls `stop` (e.g. stops the
 * backend server) once `stopAfter` bytes went out, and keeps coming.
 */
export function bodyStoppingServer(stop: () => Promise<void>, stopAfter: number, total = 256 * MiB): ReadableStream<Uint8Array> {
  let sent = 0
  let stopped = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent >= total) return controller.close()
      if (sent >= stopAfter && !stopped) {
        stopped = true
        await stop()
      }
      const chunk = randomBytes(MiB)
      sent += chunk.length
      controller.enqueue(chunk)
    },
  })
}

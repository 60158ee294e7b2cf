import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'

/** The largest file the checker reads: a configuration, a PEM certificate or key. */
export const MAX_FILE_BYTES = 1024 * 1024

/** Why a file was not read, in words for the checker's report. */
export class SmallFileError extends Error {
  override name = 'SmallFileError'
}

/** Reads a regular file of at most MAX_FILE_BYTES as UTF-8 (see readSmallFileBytes). */
export function readSmallFile(path: string): string {
  return readSmallFileBytes(path).toString('utf8')
}

/**
 * Reads the bytes of a regular file of at most MAX_FILE_BYTES. The file is opened without blocking
 * and judged by its open descriptor, so a FIFO (which would block forever), a device such as
 * /dev/zero (which never ends) or a file swapped in after a check is refused, not read.
 * Throws SmallFileError saying why, or the system error of the open.
 */
export function readSmallFileBytes(path: string): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw new SmallFileError('is not a regular file')
    if (stat.size > MAX_FILE_BYTES) {
      throw new SmallFileError(`is larger than ${MAX_FILE_BYTES} bytes (1 MiB)`)
    }
    // One byte more than allowed tells a file that grew since fstat from one that did not.
    const buffer = Buffer.alloc(MAX_FILE_BYTES + 1)
    let size = 0
    for (;;) {
      const n = readSync(fd, buffer, size, buffer.length - size, null)
      if (n === 0) break
      size += n
      if (size > MAX_FILE_BYTES) {
        throw new SmallFileError(`is larger than ${MAX_FILE_BYTES} bytes (1 MiB)`)
      }
    }
    return buffer.subarray(0, size)
  } finally {
    closeSync(fd)
  }
}

/**
 * @module workers/plugins/plg_image_ascii/render
 * Pixels → ASCII art, pure: the grid's geometry and the character ramp. No I/O and no
 * image library, so it is tested on hand-made pixels.
 *
 * Ramp convention (docs/plugins.md): `" .,:;i1tfLCG08@"` runs from light to dark,
 * as ink on paper: a dark pixel gets a dense character (`@`), a light one a space. On a
 * light-background terminal the picture reads as a positive; on a dark background it
 * reads as a negative (the dense characters glow). With colour on, every character also
 * carries its pixel's colour, which reads right on either background. Transparent pixels
 * are treated as white paper (a space).
 */

/** From light to dark (Filestash's ramp). */
export const RAMP = ' .,:;i1tfLCG08@'

/** A character cell is about twice as tall as it is wide: one row covers two columns' height. */
export const CELL_ASPECT = 0.5

/** Rows at most: a very tall image is narrowed (aspect kept) rather than run to endless rows. */
export const MAX_ROWS = 1000

/** The character grid for an image of `w`×`h` pixels at `width` columns. */
export function gridFor(w: number, h: number, width: number): { cols: number; rows: number } {
  const ratio = (h / w) * CELL_ASPECT
  const rows = Math.max(1, Math.round(width * ratio))
  if (rows <= MAX_ROWS) return { cols: width, rows }
  return { cols: Math.max(1, Math.min(width, Math.round(MAX_ROWS / ratio))), rows: MAX_ROWS }
}

/** The ramp character for an sRGB colour: by luma (Rec. 709 weights), light → space, dark → `@`. */
export function charFor(r: number, g: number, b: number): string {
  const luma = 0.2126 * r + 0.7152 * g + 0.0722 * b // 0..255
  const darkness = 1 - luma / 255
  return RAMP[Math.round(darkness * (RAMP.length - 1))]!
}

/**
 * `rows` lines of `cols` characters, each ending in `\n`, from packed RGB pixels (3 bytes
 * each, row-major). With `color`, a 24-bit ANSI foreground code (`ESC[38;2;r;g;bm`)
 * precedes each change of colour, and every line ends with a reset (`ESC[0m`), so a cut
 * or a line pasted alone never leaves the terminal coloured.
 */
export function renderAscii(rgb: Uint8Array, cols: number, rows: number, color: boolean): string {
  if (rgb.length < cols * rows * 3) throw new Error(`renderAscii: ${rgb.length} bytes for ${cols}x${rows} RGB pixels`)
  const lines: string[] = []
  for (let y = 0; y < rows; y++) {
    let line = ''
    let last = -1
    for (let x = 0; x < cols; x++) {
      const i = (y * cols + x) * 3
      const r = rgb[i]!
      const g = rgb[i + 1]!
      const b = rgb[i + 2]!
      if (color) {
        const key = (r << 16) | (g << 8) | b
        if (key !== last) line += `\x1b[38;2;${r};${g};${b}m`
        last = key
      }
      line += charFor(r, g, b)
    }
    lines.push(color ? `${line}\x1b[0m\n` : `${line}\n`)
  }
  return lines.join('')
}

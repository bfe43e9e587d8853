/**
 * Pixel formats (RFC 6143 §7.4) and the test picture the simulator's RFB server draws: a colour
 * gradient with a band across the middle, so a VNC client visibly shows that it is connected.
 */
export interface PixelFormat {
  bitsPerPixel: 8 | 16 | 32;
  depth: number;
  bigEndian: boolean;
  trueColour: boolean;
  redMax: number;
  greenMax: number;
  blueMax: number;
  redShift: number;
  greenShift: number;
  blueShift: number;
}

/** 32 bpp, depth 24, little-endian, 8 bits per channel: what most servers offer first. */
export const DEFAULT_PIXEL_FORMAT: Readonly<PixelFormat> = Object.freeze({
  bitsPerPixel: 32,
  depth: 24,
  bigEndian: false,
  trueColour: true,
  redMax: 255,
  greenMax: 255,
  blueMax: 255,
  redShift: 16,
  greenShift: 8,
  blueShift: 0,
});

export function encodePixelFormat(pf: PixelFormat): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt8(pf.bitsPerPixel, 0);
  b.writeUInt8(pf.depth, 1);
  b.writeUInt8(pf.bigEndian ? 1 : 0, 2);
  b.writeUInt8(pf.trueColour ? 1 : 0, 3);
  b.writeUInt16BE(pf.redMax, 4);
  b.writeUInt16BE(pf.greenMax, 6);
  b.writeUInt16BE(pf.blueMax, 8);
  b.writeUInt8(pf.redShift, 10);
  b.writeUInt8(pf.greenShift, 11);
  b.writeUInt8(pf.blueShift, 12);
  return b;
}

/** Parses a PIXEL_FORMAT; undefined for what the server cannot produce (colour maps, odd sizes). */
export function decodePixelFormat(b: Buffer): PixelFormat | undefined {
  const bitsPerPixel = b.readUInt8(0);
  if (bitsPerPixel !== 8 && bitsPerPixel !== 16 && bitsPerPixel !== 32) return undefined;
  if (b.readUInt8(3) === 0) return undefined;
  return {
    bitsPerPixel,
    depth: b.readUInt8(1),
    bigEndian: b.readUInt8(2) !== 0,
    trueColour: true,
    redMax: b.readUInt16BE(4),
    greenMax: b.readUInt16BE(6),
    blueMax: b.readUInt16BE(8),
    redShift: b.readUInt8(10),
    greenShift: b.readUInt8(11),
    blueShift: b.readUInt8(12),
  };
}

export type Rgb = readonly [number, number, number];

/** The test picture: red grows left to right, green top to bottom; an orange band across the middle fifth. */
export function testPicture(x: number, y: number, width: number, height: number): Rgb {
  if (y >= Math.floor(height * 0.4) && y < Math.floor(height * 0.6)) return [255, 140, 0];
  const r = width > 1 ? Math.round((x * 255) / (width - 1)) : 0;
  const g = height > 1 ? Math.round((y * 255) / (height - 1)) : 0;
  return [r, g, 160];
}

function scale(channel: number, max: number): number {
  return Math.round((channel * max) / 255);
}

/** One pixel in the client's format. */
export function writePixel(out: Buffer, offset: number, [r, g, b]: Rgb, pf: PixelFormat): void {
  const value =
    ((scale(r, pf.redMax) << pf.redShift) |
      (scale(g, pf.greenMax) << pf.greenShift) |
      (scale(b, pf.blueMax) << pf.blueShift)) >>>
    0;
  switch (pf.bitsPerPixel) {
    case 8:
      out.writeUInt8(value & 0xff, offset);
      break;
    case 16:
      if (pf.bigEndian) out.writeUInt16BE(value & 0xffff, offset);
      else out.writeUInt16LE(value & 0xffff, offset);
      break;
    case 32:
      if (pf.bigEndian) out.writeUInt32BE(value, offset);
      else out.writeUInt32LE(value, offset);
      break;
  }
}

/** Raw-encoded pixels of a rectangle of the test picture. */
export function rawRectangle(
  x: number,
  y: number,
  w: number,
  h: number,
  fbWidth: number,
  fbHeight: number,
  pf: PixelFormat,
): Buffer {
  const bytes = pf.bitsPerPixel / 8;
  const out = Buffer.alloc(w * h * bytes);
  let offset = 0;
  for (let row = y; row < y + h; row++) {
    for (let col = x; col < x + w; col++) {
      writePixel(out, offset, testPicture(col, row, fbWidth, fbHeight), pf);
      offset += bytes;
    }
  }
  return out;
}

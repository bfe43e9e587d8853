import {
  DEFAULT_PIXEL_FORMAT,
  decodePixelFormat,
  encodePixelFormat,
  rawRectangle,
  testPicture,
  writePixel,
  type PixelFormat,
} from './rfb-pixels';

const rgb565: PixelFormat = {
  ...DEFAULT_PIXEL_FORMAT,
  bitsPerPixel: 16,
  depth: 16,
  redMax: 31,
  greenMax: 63,
  blueMax: 31,
  redShift: 11,
  greenShift: 5,
  blueShift: 0,
};
const bgr233: PixelFormat = {
  ...DEFAULT_PIXEL_FORMAT,
  bitsPerPixel: 8,
  depth: 8,
  redMax: 7,
  greenMax: 7,
  blueMax: 3,
  redShift: 0,
  greenShift: 3,
  blueShift: 6,
};

describe('RFB pixels', () => {
  it('round-trips a pixel format through its wire form', () => {
    expect(decodePixelFormat(encodePixelFormat(DEFAULT_PIXEL_FORMAT))).toEqual(DEFAULT_PIXEL_FORMAT);
    expect(decodePixelFormat(encodePixelFormat({ ...rgb565, bigEndian: true }))).toEqual({
      ...rgb565,
      bigEndian: true,
    });
  });

  it('refuses colour-map and unsupported pixel sizes', () => {
    expect(decodePixelFormat(encodePixelFormat({ ...DEFAULT_PIXEL_FORMAT, trueColour: false }))).toBeUndefined();
    expect(decodePixelFormat(encodePixelFormat({ ...DEFAULT_PIXEL_FORMAT, bitsPerPixel: 24 as 32 }))).toBeUndefined();
  });

  it('writes 32, 16 and 8 bpp pixels in the requested byte order', () => {
    const out = Buffer.alloc(4);
    writePixel(out, 0, [255, 0, 0], DEFAULT_PIXEL_FORMAT);
    expect(out.toString('hex')).toBe('0000ff00');
    writePixel(out, 0, [255, 0, 0], { ...DEFAULT_PIXEL_FORMAT, bigEndian: true });
    expect(out.toString('hex')).toBe('00ff0000');
    writePixel(out, 0, [255, 255, 255], { ...rgb565, bigEndian: true });
    expect(out.subarray(0, 2).toString('hex')).toBe('ffff');
    writePixel(out, 0, [0, 0, 255], rgb565);
    expect(out.subarray(0, 2).toString('hex')).toBe('1f00');
    writePixel(out, 0, [0, 0, 255], bgr233);
    expect(out[0]).toBe(0xc0);
  });

  it('draws a gradient with a band across the middle', () => {
    expect(testPicture(0, 0, 320, 200)).toEqual([0, 0, 160]);
    expect(testPicture(319, 199, 320, 200)).toEqual([255, 255, 160]);
    expect(testPicture(10, 100, 320, 200)).toEqual([255, 140, 0]);
  });

  it('encodes a rectangle row by row at the pixel size of the format', () => {
    const rect = rawRectangle(0, 0, 2, 3, 320, 200, rgb565);
    expect(rect.length).toBe(2 * 3 * 2);
  });
});

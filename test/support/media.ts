// Real bytes of every format the drive handles, made here: images by sharp, the rest by hand
// from their container layouts (RIFF/WAVE, Ogg pages, EBML for WebM, PNG chunks for APNG).
import { deflateSync } from "node:zlib";
import sharp from "sharp";

export async function image(
  format: "png" | "jpeg" | "webp" | "gif" | "avif",
  width = 640,
  height = 480,
): Promise<Buffer> {
  const base = sharp({
    create: { width, height, channels: 3, background: { r: 200, g: 60, b: 90 } },
  }).composite([
    {
      input: await sharp({
        create: {
          width: Math.ceil(width / 2),
          height: Math.ceil(height / 2),
          channels: 3,
          background: { r: 20, g: 180, b: 240 },
        },
      })
        .png()
        .toBuffer(),
      left: 0,
      top: 0,
    },
  ]);
  return base.toFormat(format).toBuffer();
}

function crc32(data: Buffer): number {
  let crc = ~0;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An animated PNG: two frames of a 16x16 RGB image. */
export function apng(): Buffer {
  const width = 16;
  const height = 16;
  const frame = (r: number) => {
    const rows: Buffer[] = [];
    for (let y = 0; y < height; y++) rows.push(Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, r)]));
    return deflateSync(Buffer.concat(rows));
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const actl = Buffer.alloc(8);
  actl.writeUInt32BE(2, 0);
  const fctl = (sequence: number) => {
    const data = Buffer.alloc(26);
    data.writeUInt32BE(sequence, 0);
    data.writeUInt32BE(width, 4);
    data.writeUInt32BE(height, 8);
    data.writeUInt16BE(1, 20);
    data.writeUInt16BE(10, 22);
    return chunk("fcTL", data);
  };
  const fdat = Buffer.concat([Buffer.from([0, 0, 0, 2]), frame(40)]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("acTL", actl),
    fctl(0),
    chunk("IDAT", frame(200)),
    fctl(1),
    chunk("fdAT", fdat),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The 44-byte header of a PCM WAV file carrying `dataBytes` of 16-bit samples. */
export function wavHeader(dataBytes: number, sampleRate = 8000, channels = 1): Buffer {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/** A WAV file: `seconds` of 8 kHz 16-bit mono silence. */
export function wav(seconds = 1): Buffer {
  const samples = 8000 * seconds;
  return Buffer.concat([wavHeader(samples * 2), Buffer.alloc(samples * 2)]);
}

/** An Ogg stream whose first page carries an Opus identification header. */
export function ogg(): Buffer {
  const opusHead = Buffer.alloc(19);
  opusHead.write("OpusHead", 0, "ascii");
  opusHead.set([1, 1], 8);
  opusHead.writeUInt16LE(312, 10);
  opusHead.writeUInt32LE(48000, 12);
  const page = Buffer.alloc(28);
  page.write("OggS", 0, "ascii");
  page[5] = 0x02; // beginning of stream
  page.writeUInt32LE(0x1234, 14); // serial
  page[26] = 1; // one segment
  page[27] = opusHead.length;
  const whole = Buffer.concat([page, opusHead]);
  whole.writeUInt32LE(0, 22);
  return Buffer.concat([whole, Buffer.alloc(256)]);
}

function ebml(id: number[], data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(id), Buffer.from([0x80 | data.length]), data]);
}

/** A WebM file: an EBML header with DocType "webm" and an empty Segment. */
export function webm(): Buffer {
  const header = Buffer.concat([
    ebml([0x42, 0x86], Buffer.from([1])),
    ebml([0x42, 0xf7], Buffer.from([1])),
    ebml([0x42, 0xf2], Buffer.from([4])),
    ebml([0x42, 0xf3], Buffer.from([8])),
    ebml([0x42, 0x82], Buffer.from("webm", "ascii")),
    ebml([0x42, 0x87], Buffer.from([4])),
    ebml([0x42, 0x85], Buffer.from([2])),
  ]);
  return Buffer.concat([
    ebml([0x1a, 0x45, 0xdf, 0xa3], header),
    Buffer.from([0x18, 0x53, 0x80, 0x67, 0x80]),
    Buffer.alloc(64),
  ]);
}

/**
 * A decompression bomb: a complete, valid PNG of `side` x `side` black greyscale pixels
 * (144 megapixels by default), which deflate shrinks to a small file.
 */
export function pngBomb(side = 12_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = deflateSync(Buffer.alloc((side + 1) * side), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", rows),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

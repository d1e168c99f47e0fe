// What an uploaded file is, read from its bytes (docs/drive.md#uploads): the MIME type by
// file-type, never the client's word; for images a WebP thumbnail (at most 400 px on its long side)
// and the blurhash of that thumbnail, made by sharp.
import fs from "node:fs/promises";
import { encode } from "blurhash";
import { fileTypeFromFile } from "file-type";
import { DomainError } from "../errors.ts";

/** The spec's allowed types (4.5). WAV is reported as audio/wav, the name browsers use. */
export const ALLOWED_TYPES = new Set([
  "image/apng",
  "image/avif",
  "image/gif",
  "image/jpeg",
  "image/png",
  "image/webp",
  "audio/wave",
  "audio/wav",
  "audio/webm",
  "audio/mpeg",
  "video/mpeg",
  "video/webm",
  "audio/ogg",
]);

// Names file-type gives that the spec lists under another name.
const ALIASES: Record<string, string> = {
  "audio/vnd.wave": "audio/wav",
  "audio/x-wav": "audio/wav",
  "audio/wave": "audio/wav",
  "audio/opus": "audio/ogg",
  "audio/x-opus+ogg": "audio/ogg",
  "audio/vorbis": "audio/ogg",
  "audio/x-vorbis+ogg": "audio/ogg",
  "audio/ogg; codecs=opus": "audio/ogg",
};

const THUMBNAIL_EDGE = 400;
/** Decompression-bomb guard: images over 100 megapixels are refused, not decoded. */
const MAX_PIXELS = 100_000_000;

let sharpLoaded: Promise<typeof import("sharp").default> | undefined;

/** sharp and libvips (some 15 MB resident) are loaded with the first image, not at start. */
function loadSharp(): Promise<typeof import("sharp").default> {
  sharpLoaded ??= import("sharp").then(({ default: sharp }) => {
    // Each image is processed once: libvips' operation cache would only hold memory.
    sharp.cache(false);
    return sharp;
  });
  return sharpLoaded;
}

export interface Media {
  mime: string;
  /** Blurhash of the thumbnail; "" for files that are not images. */
  blurhash: string;
  thumbnail?: { path: string; size: number };
}

export async function sniffType(path: string): Promise<string> {
  const detected = (await fileTypeFromFile(path))?.mime as string | undefined;
  const mime = detected === undefined ? undefined : (ALIASES[detected] ?? detected);
  if (!mime || !ALLOWED_TYPES.has(mime)) throw new DomainError("UNSUPPORTED_FILE_TYPE");
  return mime;
}

/** The type of the file at `path`, and for an image its thumbnail (written beside it) and blurhash. */
export async function inspectMedia(path: string): Promise<Media> {
  const mime = await sniffType(path);
  if (!mime.startsWith("image/")) return { mime, blurhash: "" };
  const thumbnailPath = `${path}.thumbnail.webp`;
  const sharp = await loadSharp();
  try {
    // The first frame of an animation; EXIF orientation applied.
    const info = await sharp(path, { limitInputPixels: MAX_PIXELS, failOn: "error" })
      .rotate()
      .resize(THUMBNAIL_EDGE, THUMBNAIL_EDGE, { fit: "inside", withoutEnlargement: true })
      .webp({ quality: 80 })
      .toFile(thumbnailPath);
    const { data, info: raw } = await sharp(thumbnailPath)
      .resize(32, 32, { fit: "inside" })
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const blurhash = encode(new Uint8ClampedArray(data), raw.width, raw.height, 4, 3);
    return { mime, blurhash, thumbnail: { path: thumbnailPath, size: info.size } };
  } catch (err) {
    await fs.rm(thumbnailPath, { force: true });
    if (err instanceof DomainError) throw err;
    // Undecodable, truncated, or over the pixel limit: not an image we can take.
    throw new DomainError("UNSUPPORTED_FILE_TYPE");
  }
}

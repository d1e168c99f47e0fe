// Murmur's plain text as the HTML ActivityPub carries (a note's `content`, an actor's `summary`):
// escaped, a blank line a paragraph, a line break `<br>`, as Mastodon renders its own; a note's
// mentions and links as anchors (docs/federation.md#notes).
import { type Mention, mentionsIn } from "../domain/notes/mentions.ts";

function escaped(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );
}

function paragraphs(html: string): string {
  return html
    .split(/\r?\n(?:[ \t]*\r?\n)+/)
    .map((paragraph) => `<p>${paragraph.replace(/\r?\n/g, "<br>")}</p>`)
    .join("");
}

export function htmlOf(text: string): string {
  return paragraphs(escaped(text));
}

/**
 * An http(s) URL as Mastodon links one: the scheme written out (a bare domain stays text), up to
 * white space or what cannot be in a URL unescaped, less the punctuation that ends a sentence.
 */
const LINK = /\bhttps?:\/\/[^\s<>"'`]+/g;
const TRAILING = /[.,:;!?)\]}]+$/;

/**
 * A note's text as HTML with its links, and each mention `actorOf` knows (the mentioned account's
 * actor id), as anchors; an unknown mention stays text.
 */
export function noteHtmlOf(text: string, localHost: string, actorOf: (mention: Mention) => string | undefined): string {
  const anchors: { index: number; end: number; html: string }[] = [];
  for (const match of text.matchAll(LINK)) {
    const url = match[0].replace(TRAILING, "");
    if (!URL.canParse(url)) continue;
    const href = escaped(url);
    anchors.push({ index: match.index, end: match.index + url.length, html: `<a href="${href}">${href}</a>` });
  }
  for (const mention of mentionsIn(text, localHost)) {
    const end = mention.index + mention.text.length;
    // A name within a link (its user part, `https://host/@name`) is the link's.
    if (anchors.some((a) => a.index < end && mention.index < a.end)) continue;
    const actor = actorOf(mention);
    if (!actor) continue;
    anchors.push({
      index: mention.index,
      end,
      html: `<a href="${escaped(actor)}" class="u-url mention">${escaped(mention.text)}</a>`,
    });
  }
  anchors.sort((x, y) => x.index - y.index);
  let html = "";
  let at = 0;
  for (const anchor of anchors) {
    html += escaped(text.slice(at, anchor.index)) + anchor.html;
    at = anchor.end;
  }
  return paragraphs(html + escaped(text.slice(at)));
}

// Murmur's plain text as the HTML ActivityPub carries (a note's `content`, an actor's `summary`):
// escaped, a blank line a paragraph, a line break `<br>`, as Mastodon renders its own.
export function htmlOf(text: string): string {
  const escaped = text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );
  return escaped
    .split(/\r?\n(?:[ \t]*\r?\n)+/)
    .map((paragraph) => `<p>${paragraph.replace(/\r?\n/g, "<br>")}</p>`)
    .join("");
}

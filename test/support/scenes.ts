// Scenes several tests read notes from, set through the public API.
import { expect } from "vitest";
import * as act from "./actions.ts";
import { account, type TestAccount, uploadFile } from "./fixtures.ts";
import { image, wav } from "./media.ts";
import type { TestServer } from "./server.ts";

export const SCENE_EMOJI = ["👍", "🎉", "❤️", "🇯🇵", "👩‍👩‍👧"];

/**
 * A note that has everything a note shows: its author has an avatar and a bio to escape, it has
 * a content warning, two files (a sound, then an NSFW image), and 24 reactions of five emoji by
 * accounts `<prefix>r0`..`<prefix>r23` (the first older than the newest 20); `other` renotes,
 * quotes and replies to it.
 */
export async function viralNote(server: TestServer, author: TestAccount, other: TestAccount, prefix: string) {
  const png = await image("png", 8, 8);
  const avatar = await uploadFile(server, author, png, "avatar.png");
  await server.request("PATCH", `/accounts/${author.name}`, {
    token: author.token,
    body: { avatar_file_id: avatar.id, bio: 'bio "quoted" \\ and\nnewline' },
  });
  const files = [
    await uploadFile(server, author, png, "one.png", { nsfw: "true" }),
    await uploadFile(server, author, wav(), "sound.wav"),
  ];
  const viral = await act.post(server, author, {
    content: 'files, "quotes", \\ and émoji 🎉\u0001',
    cw_comment: "cw",
    attachment_file_ids: [files[1].id, files[0].id],
  });
  await server.request("POST", `/notes/${viral.id}/renote`, { token: other.token, body: {} });
  await server.request("POST", `/notes/${viral.id}/renote`, { token: other.token, body: { content: "quote" } });
  await server.request("POST", `/notes/${viral.id}/reply`, { token: other.token, body: { content: "reply" } });
  const reactors: TestAccount[] = [];
  for (let i = 0; i < 24; i++) {
    const who = await account(server, `${prefix}r${i}`);
    reactors.push(who);
    const reacted = await server.request("POST", `/notes/${viral.id}/reaction`, {
      token: who.token,
      body: { emoji: SCENE_EMOJI[i % SCENE_EMOJI.length] },
    });
    expect(reacted.status).toBe(200);
  }
  return { viral, files, reactors };
}

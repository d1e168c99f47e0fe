// Search over REST (docs/search.md): GET /search/notes with the built-in PostgreSQL
// search. Every operator and combinator, precedence, negation, phrases, CJK substrings, LIKE
// wildcards taken literally, every INVALID_QUERY case, the one visibility rule (followers,
// direct, frozen authors), newest first, 100 a page, before_id paging, and injection attempts.
//
// Every test writes its own made-up words, so that each query's answer is known exactly: no
// other test's note contains them.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as act from "./support/actions.ts";
import { cast } from "./support/cast.ts";
import { expectError } from "./support/expect.ts";
import { account, type TestAccount, uploadFile } from "./support/fixtures.ts";
import { image } from "./support/media.ts";
import { type Answer, HOST, startTestServer, type TestServer } from "./support/server.ts";
import { FullNoteShape, ISO_MS, SNOWFLAKE } from "./support/shapes.ts";

let server: TestServer;
// alice writes most notes; fol follows alice; bob receives her direct notes; sam is a logged-in
// stranger; mod is a moderator. Other accounts are used by one test each.
let alice: TestAccount;
let fol: TestAccount;
let bob: TestAccount;
let sam: TestAccount;
let mod: TestAccount;

beforeAll(async () => {
  server = await startTestServer();
  ({ alice, follower: fol, bob, stranger: sam, moderator: mod } = await cast(server));
});
afterAll(() => server.close());

type Who = Pick<TestAccount, "token"> | undefined;

interface Created {
  id: string;
  content: string;
}

const sorted = (value: object) => Object.keys(value).sort();

function search(query: string | undefined, who?: Who, beforeId?: string): Promise<Answer> {
  const params = new URLSearchParams();
  if (query !== undefined) params.set("query", query);
  if (beforeId !== undefined) params.set("before_id", beforeId);
  return server.request("GET", `/search/notes?${params}`, { token: who?.token });
}

/** Every item of a search answer has the full note shape (with reactions and author). */
// biome-ignore lint/suspicious/noExplicitAny: answer items are read field by field
function expectFullNote(item: any) {
  FullNoteShape.parse(item);
  expect(item.id).toMatch(SNOWFLAKE);
  expect(item.created_at).toMatch(ISO_MS);
  expect(typeof item.content).toBe("string");
  expect(typeof item.cw_comment).toBe("string");
  expect(["public", "home", "followers", "direct"]).toContain(item.visibility);
  expect(Array.isArray(item.attachment_files)).toBe(true);
  expect(Array.isArray(item.reactions)).toBe(true);
}

/** The ids a search answers, newest first; the answer must be 200 with full notes. */
async function found(query: string, who?: Who, beforeId?: string): Promise<string[]> {
  const answer = await search(query, who, beforeId);
  expect(answer.status, `${query}: ${JSON.stringify(answer.body)}`).toBe(200);
  expect(Array.isArray(answer.body), query).toBe(true);
  for (const item of answer.body) expectFullNote(item);
  return answer.body.map((item: { id: string }) => item.id);
}

/** The ids of these notes as a search must order them: newest (largest id) first. */
function newestFirst(...notes: Created[]): string[] {
  return notes.map((n) => n.id).sort((a, b) => (BigInt(b) > BigInt(a) ? 1 : BigInt(b) < BigInt(a) ? -1 : 0));
}

const note = (who: TestAccount, body: Record<string, unknown>): Promise<Created> => act.post(server, who, body);

async function renote(who: TestAccount, id: string, body: Record<string, unknown> = {}): Promise<Created> {
  const answer = await server.request("POST", `/notes/${id}/renote`, { body, token: who.token });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
}

const moderate = (name: string, action: act.ModerationAction) => act.moderate(server, mod, name, action);

describe("keywords", () => {
  it("match case-insensitive substrings of content or cw_comment: 'cat' finds 'Concatenate', 'CATS', a cw", async () => {
    const concat = await note(alice, { content: "Concatenate two strings" });
    const cats = await note(alice, { content: "CATS rule the house" });
    const warned = await note(alice, { content: "hidden body", cw_comment: "Bobcat warning" });
    await note(alice, { content: "a dog only", cw_comment: "nothing feline" });
    const expected = newestFirst(concat, cats, warned);
    expect(await found("cat")).toEqual(expected);
    expect(await found("CAT")).toEqual(expected);
    expect(await found("cAt")).toEqual(expected);
    expect(await found("cats")).toEqual([cats.id]);
    expect(await found("hidden")).toEqual([warned.id]);
    expect(await found("bobcat")).toEqual([warned.id]);
  });

  it("fold case beyond ASCII too: accented, Cyrillic and Greek letters", async () => {
    const french = await note(alice, { content: "L'ÉCOLE est fermée" });
    const russian = await note(alice, { content: "Привет МИР" });
    const greek = await note(alice, { content: "ΚΑΛΗΜΈΡΑ κόσμε" });
    expect(await found("école")).toEqual([french.id]);
    expect(await found("FERMÉE")).toEqual([french.id]);
    expect(await found("мир")).toEqual([russian.id]);
    expect(await found("привет")).toEqual([russian.id]);
    expect(await found("καλημέρα")).toEqual([greek.id]);
  });

  it("no longer finds a deleted note", async () => {
    const doomed = await note(alice, { content: "ephemeral mayfly" });
    expect(await found("mayfly")).toEqual([doomed.id]);
    expect((await server.request("DELETE", `/notes/${doomed.id}`, { token: alice.token })).status).toBe(204);
    expect(await found("mayfly")).toEqual([]);
  });

  it("answers items in the full note shape, as timelines do", async () => {
    const created = await note(alice, { content: "Shapely hexagon", cw_comment: "geometry" });
    const answer = await search("hexagon");
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([
      {
        id: created.id,
        content: "Shapely hexagon",
        cw_comment: "geometry",
        visibility: "public",
        created_at: expect.stringMatching(ISO_MS),
        attachment_files: [],
        reactions: [],
        reaction_count: 0,
        reaction_counts: {},
        author: {
          id: alice.id,
          name: `@alice@${HOST}`,
          display_name: expect.any(String),
          bio: expect.any(String),
          avatar: expect.any(String),
          header: expect.any(String),
          followed_count: expect.any(Number),
          following_count: expect.any(Number),
        },
      },
    ]);
  });

  it("finds nothing, as 200 [], when no note matches", async () => {
    expect(await found("xylophonezz")).toEqual([]);
  });

  it("is served under /v0 and with a trailing slash alike", async () => {
    const created = await note(alice, { content: "versioned vortex" });
    for (const url of ["/v0/search/notes", "/search/notes/", "/v0/search/notes/"]) {
      const answer = await server.request("GET", `${url}?query=vortex`);
      expect(answer.status, url).toBe(200);
      expect(answer.body.map((n: Created) => n.id)).toEqual([created.id]);
    }
  });
});

describe("phrases", () => {
  it("match the quoted text with its spaces, case-insensitively, also inside words", async () => {
    const fox = await note(alice, { content: "the quick brown fox" });
    const swapped = await note(alice, { content: "brown and quick" });
    const loud = await note(alice, { content: "QUICK BROWN dogs" });
    expect(await found('"quick brown"')).toEqual(newestFirst(fox, loud));
    // Without quotes the words are ANDed, in any order.
    expect(await found("quick brown")).toEqual(newestFirst(fox, swapped, loud));
    expect(await found('"brown fox"')).toEqual([fox.id]);
    expect(await found('"ick bro"')).toEqual(newestFirst(fox, loud));
    expect(await found('"brown quick"')).toEqual([]);
  });

  it("match in cw_comment too", async () => {
    const warned = await note(alice, { content: "spoiler inside", cw_comment: "Ending Of Moonfall revealed" });
    expect(await found('"of moonfall"')).toEqual([warned.id]);
  });
});

describe("CJK text", () => {
  it("matches substrings without spaces: '猫' in '猫が好き', '好き', '猫が'", async () => {
    const likesCats = await note(alice, { content: "猫が好き" });
    const likesDogs = await note(alice, { content: "犬が好き" });
    const catTongue = await note(alice, { content: "猫舌です" });
    const sukiyaki = await note(alice, { content: "すき焼きを食べた" });
    const chinese = await note(alice, { content: "我喜欢猫" });
    const korean = await note(alice, { content: "고양이를 좋아해요", cw_comment: "동물" });
    expect(await found("猫")).toEqual(newestFirst(likesCats, catTongue, chinese));
    expect(await found("好き")).toEqual(newestFirst(likesCats, likesDogs));
    expect(await found("猫が")).toEqual([likesCats.id]);
    expect(await found('"が好き"')).toEqual(newestFirst(likesCats, likesDogs));
    expect(await found("猫 好き")).toEqual([likesCats.id]);
    expect(await found("すき")).toEqual([sukiyaki.id]);
    expect(await found("양이")).toEqual([korean.id]);
    expect(await found("동물")).toEqual([korean.id]);
  });
});

describe("combinators", () => {
  let both: Created;
  let wumpOnly: Created;
  let quixOnly: Created;
  let vampOnly: Created;
  let wumpVamp: Created;

  beforeAll(async () => {
    both = await note(alice, { content: "wump quix" });
    wumpOnly = await note(alice, { content: "wump" });
    quixOnly = await note(alice, { content: "quix" });
    vampOnly = await note(alice, { content: "vamp" });
    wumpVamp = await note(alice, { content: "vamp and wump" });
  });

  it("space is AND", async () => {
    expect(await found("wump quix")).toEqual([both.id]);
    expect(await found("quix wump")).toEqual([both.id]);
    expect(await found("wump   vamp")).toEqual([wumpVamp.id]);
    expect(await found("wump quix vamp")).toEqual([]);
  });

  it("OR is OR; only the upper-case word is the operator", async () => {
    expect(await found("wump OR quix")).toEqual(newestFirst(both, wumpOnly, quixOnly, wumpVamp));
    expect(await found("quix OR vamp")).toEqual(newestFirst(both, quixOnly, vampOnly, wumpVamp));
    expect(await found("wump OR quix OR vamp")).toEqual(newestFirst(both, wumpOnly, quixOnly, vampOnly, wumpVamp));
    // Lower-case "or" is a keyword: wump AND "or" AND quix, which no note holds.
    expect(await found("wump or quix")).toEqual([]);
  });

  it("AND binds tighter than OR: 'a b OR c' is (a b) OR c", async () => {
    const expected = newestFirst(both, vampOnly, wumpVamp);
    expect(await found("wump quix OR vamp")).toEqual(expected);
    // Read the other way, wump (quix OR vamp), vampOnly would be left out.
    expect(await found("vamp OR wump quix")).toEqual(expected);
  });

  it("parentheses group", async () => {
    expect(await found("wump (quix OR vamp)")).toEqual(newestFirst(both, wumpVamp));
    expect(await found("(quix OR vamp) wump")).toEqual(newestFirst(both, wumpVamp));
    expect(await found("(wump OR quix) (vamp OR quix)")).toEqual(newestFirst(both, quixOnly, wumpVamp));
    expect(await found("((wump))")).toEqual(newestFirst(both, wumpOnly, wumpVamp));
    expect(await found("(wump quix) OR (vamp)")).toEqual(newestFirst(both, vampOnly, wumpVamp));
  });
});

describe("negation", () => {
  let red: Created;
  let blueSky: Created;
  let green: Created;
  let redBlue: Created;
  let cwRed: Created;

  beforeAll(async () => {
    red = await note(alice, { content: "tulip red" });
    blueSky = await note(alice, { content: "tulip blue sky" });
    green = await note(alice, { content: "tulip green" });
    redBlue = await note(alice, { content: "tulip red blue" });
    cwRed = await note(alice, { content: "tulip", cw_comment: "Red alert" });
  });

  it("of a keyword leaves out notes holding it in content or cw_comment", async () => {
    expect(await found("tulip -red")).toEqual(newestFirst(blueSky, green));
    expect(await found("-red tulip")).toEqual(newestFirst(blueSky, green));
    expect(await found("tulip -RED -green")).toEqual([blueSky.id]);
  });

  it("of a phrase leaves out only notes holding the whole phrase", async () => {
    expect(await found('tulip -"blue sky"')).toEqual(newestFirst(red, green, redBlue, cwRed));
    expect(await found('tulip -"red blue"')).toEqual(newestFirst(red, blueSky, green, cwRed));
  });

  it("of a group negates the whole group", async () => {
    expect(await found("tulip -(red OR green)")).toEqual([blueSky.id]);
    expect(await found("tulip -(red blue)")).toEqual(newestFirst(red, blueSky, green, cwRed));
    expect(await found("tulip -(red -blue)")).toEqual(newestFirst(blueSky, green, redBlue));
  });
});

describe("from:", () => {
  let carol: TestAccount;
  let dave: TestAccount;
  let one: Created;
  let two: Created;
  let three: Created;

  beforeAll(async () => {
    [carol, dave] = await Promise.all([account(server, "carol"), account(server, "dave")]);
    one = await note(carol, { content: "heron one" });
    two = await note(carol, { content: "heron two", visibility: "home" });
    three = await note(dave, { content: "heron three" });
  });

  it("finds the notes of the account named plainly, as @name, or qualified, in any case", async () => {
    const expected = newestFirst(one, two);
    expect(await found("from:carol")).toEqual(expected);
    expect(await found("from:@carol")).toEqual(expected);
    expect(await found(`from:@carol@${HOST}`)).toEqual(expected);
    expect(await found("from:CAROL")).toEqual(expected);
    expect(await found(`from:@Carol@${HOST.toUpperCase()}`)).toEqual(expected);
  });

  it("combines with keywords, OR and negation", async () => {
    expect(await found("from:carol two")).toEqual([two.id]);
    expect(await found("from:carol OR from:dave")).toEqual(newestFirst(one, two, three));
    expect(await found("heron -from:carol")).toEqual([three.id]);
  });

  it("of an unknown name, or of another host, finds nothing: 200 []", async () => {
    expect(await found("from:nobodyhere")).toEqual([]);
    expect(await found("from:@nobodyhere@murmur.test")).toEqual([]);
    expect(await found("from:@carol@elsewhere.example")).toEqual([]);
    expect(await found("from:nobodyhere OR from:dave")).toEqual([three.id]);
  });
});

describe("is:renote and is:quote", () => {
  let rena: TestAccount;
  let plain: Created;
  let plainOther: Created;
  let quote: Created;
  let own: Created;
  let reply: Created;

  beforeAll(async () => {
    rena = await account(server, "rena");
    const original = await note(alice, { content: "osprey original" });
    const other = await note(alice, { content: "another bird entirely" });
    plain = await renote(rena, original.id);
    quote = await renote(rena, original.id, { content: "osprey quoted here" });
    own = await note(rena, { content: "osprey of my own" });
    plainOther = await renote(rena, other.id);
    const answer = await server.request("POST", `/notes/${original.id}/reply`, {
      body: { content: "osprey reply" },
      token: rena.token,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    reply = answer.body;
  });

  it("is:renote finds plain renotes only (no content), with renote_id", async () => {
    expect(await found("from:rena is:renote")).toEqual(newestFirst(plain, plainOther));
    const answer = await search("from:rena is:renote");
    for (const item of answer.body) {
      expect(item.content).toBe("");
      expect(item.renote_id).toMatch(SNOWFLAKE);
    }
    // A plain renote has no text of its own for a keyword to match.
    expect(await found("osprey is:renote")).toEqual([]);
  });

  it("is:quote finds renotes with content only", async () => {
    expect(await found("from:rena is:quote")).toEqual([quote.id]);
    expect(await found("osprey is:quote")).toEqual([quote.id]);
    const answer = await search("from:rena is:quote");
    expect(answer.body[0]).toMatchObject({
      content: "osprey quoted here",
      renote_id: expect.stringMatching(SNOWFLAKE),
    });
  });

  it("combines with negation and OR; a reply is neither", async () => {
    expect(await found("from:rena -is:renote")).toEqual(newestFirst(quote, own, reply));
    expect(await found("from:rena -is:quote")).toEqual(newestFirst(plain, own, plainOther, reply));
    expect(await found("from:rena (is:renote OR is:quote)")).toEqual(newestFirst(plain, quote, plainOther));
    expect(await found("from:rena -is:renote -is:quote")).toEqual(newestFirst(own, reply));
  });
});

describe("has:link", () => {
  it("finds http:// or https:// URLs in content, not in cw_comment, not without a scheme", async () => {
    const http = await note(alice, { content: "wombat http://example.com/a" });
    const https = await note(alice, { content: "wombat at https://example.org/path?q=1" });
    const broken = await note(alice, { content: "wombat httpx://nope and http:/broken and ftp://old" });
    const cwLink = await note(alice, { content: "wombat", cw_comment: "https://cw.example" });
    const bare = await note(alice, { content: "wombat www.example.com" });
    expect(await found("wombat has:link")).toEqual(newestFirst(http, https));
    expect(await found("wombat -has:link")).toEqual(newestFirst(broken, cwLink, bare));
    expect(await found("has:link wombat")).toEqual(newestFirst(http, https));
  });
});

describe("has:media", () => {
  it("finds notes with one attachment or more; a deleted file leaves its note", async () => {
    const files = [];
    for (let i = 0; i < 4; i++) files.push(await uploadFile(server, alice, await image("png", 8, 8), `gecko${i}.png`));
    const one = await note(alice, { content: "gecko pic", attachment_file_ids: [files[0].id] });
    const two = await note(alice, { content: "gecko pics", attachment_file_ids: [files[1].id, files[2].id] });
    const text = await note(alice, { content: "gecko text" });
    const mediaOnly = await note(alice, { content: "", cw_comment: "gecko in cw", attachment_file_ids: [files[3].id] });

    expect(await found("gecko has:media")).toEqual(newestFirst(one, two, mediaOnly));
    expect(await found("gecko -has:media")).toEqual([text.id]);
    const answer = await search("gecko has:media");
    expect(answer.body.map((n: { attachment_files: unknown[] }) => n.attachment_files.length)).toEqual([1, 2, 1]);
    expect(sorted(answer.body[0].attachment_files[0])).toEqual(
      expect.arrayContaining(["content_type", "filename", "id", "nsfw", "url"]),
    );

    // The attachment list is read live from the drive (docs/drive.md#attachments).
    expect((await server.request("DELETE", `/drive/${files[0].id}`, { token: alice.token })).status).toBe(204);
    expect(await found("gecko has:media")).toEqual(newestFirst(two, mediaOnly));
    expect(await found("gecko -has:media")).toEqual(newestFirst(one, text));
  });
});

describe("LIKE wildcards are literal", () => {
  let percent: Created;
  let underscore: Created;
  let backslash: Created;

  beforeAll(async () => {
    percent = await note(alice, { content: "I am 100% sure" });
    await note(alice, { content: "100 percent sure" });
    underscore = await note(alice, { content: "snake_case name" });
    await note(alice, { content: "snakeXcase name" });
    backslash = await note(alice, { content: "dir\\sub\\file" });
    await note(alice, { content: "dir/sub/file" });
  });

  it("'%' finds only notes containing '%'", async () => {
    expect(await found("%")).toEqual([percent.id]);
    expect(await found("100%")).toEqual([percent.id]);
    expect(await found('"0% s"')).toEqual([percent.id]);
  });

  it("'_' finds only notes containing '_'", async () => {
    expect(await found("_")).toEqual([underscore.id]);
    expect(await found("e_c")).toEqual([underscore.id]);
    expect(await found("snake_case")).toEqual([underscore.id]);
  });

  it("'\\' finds only notes containing '\\'", async () => {
    expect(await found("\\")).toEqual([backslash.id]);
    expect(await found("\\sub")).toEqual([backslash.id]);
    expect(await found("dir\\sub\\file")).toEqual([backslash.id]);
    expect(await found("\\\\")).toEqual([]);
    expect(await found("%\\%")).toEqual([]);
  });
});

describe("INVALID_QUERY and INVALID_REQUEST", () => {
  it("a missing query parameter is 400 INVALID_REQUEST (the route schema requires it)", async () => {
    expectError(await search(undefined), 400, "INVALID_REQUEST");
    expectError(await server.request("GET", "/search/notes?before_id=1"), 400, "INVALID_REQUEST");
  });

  it("an empty query, or one of only spaces, is 400 INVALID_QUERY", async () => {
    expectError(await search(""), 400, "INVALID_QUERY");
    expectError(await search("   "), 400, "INVALID_QUERY");
  });

  it("takes 512 characters (code points) and rejects 513: 400 INVALID_QUERY", async () => {
    expect((await search("a".repeat(512))).status).toBe(200);
    expect((await search("😀".repeat(512))).status).toBe(200);
    expect((await search("猫".repeat(512))).status).toBe(200);
    expectError(await search("a".repeat(513)), 400, "INVALID_QUERY");
    expectError(await search("😀".repeat(513)), 400, "INVALID_QUERY");
    expectError(await search(`cat ${"b".repeat(509)}`), 400, "INVALID_QUERY");
  });

  it.each([
    ["(cat"],
    ["cat)"],
    ["((cat)"],
    ["(cat))"],
    [")cat("],
    ["()"],
    ['"cat'],
    ['cat "dog'],
    ['"cat" "dog'],
    ['cat"'],
  ])("unbalanced parentheses or quotes, or an empty group: %j -> 400 INVALID_QUERY", async (query) => {
    expectError(await search(query), 400, "INVALID_QUERY");
  });

  it.each([
    ["OR"],
    ["cat OR"],
    ["OR cat"],
    ["cat OR OR dog"],
    ["(cat OR)"],
    ["(OR cat)"],
    ["-"],
    ["cat -"],
    ["cat - dog"],
    ["--cat"],
    ["(cat -)"],
    ["-OR cat"],
  ])("OR or - with nothing to act on: %j -> 400 INVALID_QUERY", async (query) => {
    expectError(await search(query), 400, "INVALID_QUERY");
  });

  it.each([
    ["lang:en"],
    ["cat lang:en"],
    ["cat since:2020-01-01"],
    ["cat is:reply"],
    ["cat is:"],
    ["cat has:video"],
    ["cat has:"],
    ["cat from:"],
  ])("an unknown operator or value: %j -> 400 INVALID_QUERY", async (query) => {
    expectError(await search(query), 400, "INVALID_QUERY");
  });

  it.each([
    ["-cat"],
    ["-cat -dog"],
    ["-(cat dog)"],
    ['-"big cat"'],
    ["-from:alice"],
    ["is:renote"],
    ["is:quote"],
    ["has:link"],
    ["has:media"],
    ["has:link has:media"],
    ["is:quote OR has:link"],
    ["-cat is:renote"],
    ["(is:renote) -from:alice"],
  ])("only negated terms or only is:/has:: %j -> 400 INVALID_QUERY", async (query) => {
    expectError(await search(query), 400, "INVALID_QUERY");
  });

  it.each([
    ["", "the query is empty"],
    ["(cat", "a `(` is not closed"],
    ["cat)", "a `)` closes nothing"],
    ['"cat', "a quote is not closed"],
    ["cat -", "`-` with nothing right after it to negate"],
    ["cat OR", "`OR`, `-` or `(` with nothing to act on"],
    ["lang:en cat", "unknown operator or value `lang:` (from:, is:renote|quote, has:link|media)"],
    ["from:a/b", "from: takes an account name"],
    ["-cat", "no keyword, phrase or from: outside a negation"],
    ["a".repeat(513), "over 512 characters"],
  ])("INVALID_QUERY for %j says what is wrong in X-Error-Detail (extension)", async (query, detail) => {
    const answer = await search(query);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: { error: "INVALID_QUERY" } });
    expect(answer.headers["x-error-detail"]).toBe(detail);
  });

  it("a hyphen inside a word and a URL with a colon are keywords, not errors", async () => {
    const created = await note(alice, { content: "send an e-mail to https://mail.example/x-y" });
    expect(await found("e-mail")).toEqual([created.id]);
    expect(await found("https://mail.example/x-y")).toEqual([created.id]);
  });
});

describe("visibility", () => {
  it("followers-only notes: the author and followers; direct: the author and the recipient; anonymous: public and home", async () => {
    const pub = await note(alice, { content: "vizword public" });
    const home = await note(alice, { content: "vizword home", visibility: "home" });
    const followers = await note(alice, { content: "vizword followers", visibility: "followers" });
    const direct = await note(alice, { content: "vizword direct", visibility: "direct", send_to: bob.id });
    const open = newestFirst(pub, home);

    expect(await found("vizword")).toEqual(open);
    expect(await found("vizword", sam)).toEqual(open);
    expect(await found("vizword", alice)).toEqual(newestFirst(pub, home, followers, direct));
    expect(await found("vizword", fol)).toEqual(newestFirst(pub, home, followers));
    expect(await found("vizword", bob)).toEqual(newestFirst(pub, home, direct));
    // A moderator is no follower and no recipient.
    expect(await found("vizword", mod)).toEqual(open);
    // Also when the query names the hidden notes exactly.
    expect(await found('"vizword direct"', fol)).toEqual([]);
    expect(await found('"vizword followers"', bob)).toEqual([]);
    expect(await found("vizword from:alice -public -home", sam)).toEqual([]);
    expect(await found("vizword from:alice -public -home", bob)).toEqual([direct.id]);
  });

  it("a pending follow request to a locked account does not show its followers-only notes", async () => {
    const lockie = await account(server, "lockie");
    const locked = await server.request("PATCH", "/accounts/lockie", { token: lockie.token, body: { locked: true } });
    expect(locked.status, JSON.stringify(locked.body)).toBe(200);
    const secret = await note(lockie, { content: "lockword secret", visibility: "followers" });
    const asked = await server.request("POST", "/accounts/lockie/follow", { body: {}, token: sam.token });
    expect(asked.status, JSON.stringify(asked.body)).toBe(201);
    expect(asked.body).toMatchObject({ pending: true });
    expect(await found("lockword", sam)).toEqual([]);
    const accepted = await server.request("POST", "/follow_requests/sam/accept", { body: {}, token: lockie.token });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(204);
    expect(await found("lockword", sam)).toEqual([secret.id]);
  });

  it("a frozen author's notes are found by nobody but moderators, until unfrozen", async () => {
    const frosty = await account(server, "frosty");
    const pub = await note(frosty, { content: "frostword out in the open" });
    expect(await found("frostword")).toEqual([pub.id]);
    await moderate("frosty", "freeze");
    expect(await found("frostword")).toEqual([]);
    expect(await found("frostword", sam)).toEqual([]);
    expect(await found("from:frosty", sam)).toEqual([]);
    expect(await found("frostword", mod)).toEqual([pub.id]);
    await moderate("frosty", "unfreeze");
    expect(await found("frostword", sam)).toEqual([pub.id]);
  });
});

describe("order, limit and before_id paging", () => {
  const created: Created[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 105; i++) created.push(await note(alice, { content: `pagingword number ${i}` }));
  });

  it("answers newest first, at most 100", async () => {
    const ids = await found("pagingword");
    expect(ids).toHaveLength(100);
    expect(ids).toEqual(newestFirst(...created).slice(0, 100));
    for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i - 1]) > BigInt(ids[i])).toBe(true);
  });

  it("before_id pages further: the remaining 5, then 200 [] (search answers [], not NOTHING_LEFT)", async () => {
    const all = newestFirst(...created);
    const first = await found("pagingword");
    const second = await found("pagingword", undefined, first[first.length - 1]);
    expect(second).toEqual(all.slice(100));
    expect(second).toHaveLength(5);
    // src/domain/search/service.ts does not pass its page through timelinePage(): nothing
    // older is an empty page, not 404 NOTHING_LEFT as on timelines.
    const third = await search("pagingword", undefined, second[second.length - 1]);
    expect({ status: third.status, body: third.body }).toEqual({ status: 200, body: [] });
  });

  it("before_id excludes the note it names and pages from any point", async () => {
    const all = newestFirst(...created);
    expect(await found("pagingword", undefined, all[10])).toEqual(all.slice(11, 105));
    expect(await found("pagingword", undefined, all[104])).toEqual([]);
    // An id newer than every note (the largest 64-bit snowflake) is the first page.
    expect(await found("pagingword", undefined, "18446744073709551615")).toEqual(all.slice(0, 100));
  });

  it.each([["abc"], ["-1"], ["1.5"], [""], ["1e5"], ["18446744073709551616"], ["0x10"]])(
    "a before_id that is not a snowflake, %j, is 400 INVALID_REQUEST",
    async (beforeId) => {
      expectError(await search("pagingword", undefined, beforeId), 400, "INVALID_REQUEST");
    },
  );
});

describe("SQL injection attempts", () => {
  it.each([
    ["'; DROP TABLE notes;--"],
    ['" OR 1=1 --'],
    ["' OR '1'='1"],
    ["%' OR 1=1 --"],
    ["\\'; DELETE FROM notes; --"],
    ["cat'); DROP TABLE accounts; --"],
    ['"\'" OR ""=""'],
    ["from:alice' OR 1=1"],
  ])("%j answers 200 or 400 INVALID_QUERY, never 500", async (query) => {
    const answer = await search(query);
    expect([200, 400], JSON.stringify(answer.body)).toContain(answer.status);
    if (answer.status === 400) expectError(answer, 400, "INVALID_QUERY");
    else expect(Array.isArray(answer.body)).toBe(true);
  });

  it("finds such text literally, and the notes table still works afterwards", async () => {
    const evil = await note(alice, { content: "'; DROP TABLE notes;-- injected" });
    expect(await found('"\'; DROP TABLE notes;--"')).toEqual([evil.id]);
    expect(await found("'; DROP TABLE notes;--")).toEqual([evil.id]);
    const after = await note(alice, { content: "tablestill works" });
    const got = await server.request("GET", `/notes/${after.id}`);
    expect(got.status).toBe(200);
    expect(await found("tablestill")).toEqual([after.id]);
    expect(await server.services.db.note.count()).toBeGreaterThan(100);
  });
});

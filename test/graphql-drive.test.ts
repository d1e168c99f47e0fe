// Drive through GraphQL: uploads as GraphQL multipart requests (streamed like REST uploads),
// and the drive queries and mutations, calling the same services as REST.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { account, type TestAccount } from "./support/fixtures.ts";
import { image, wav } from "./support/media.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

let server: TestServer;
let alice: TestAccount;
let bob: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  alice = await account(server, "gd_alice");
  bob = await account(server, "gd_bob");
});
afterAll(() => server.close());

const FILE_FIELDS = "id name authorId hash mime size nsfw url thumbnail";

const UPLOAD = `mutation ($file: Upload!, $name: String, $nsfw: Boolean) {
  uploadFile(file: $file, name: $name, nsfw: $nsfw) {
    __typename
    ... on MutationUploadFileSuccess { data { ${FILE_FIELDS} } }
    ... on DomainError { code }
  }
}`;

async function upload(
  bytes: Buffer,
  filename: string,
  variables: Record<string, unknown>,
  token?: string,
  extraHeaders: Record<string, string> = {},
) {
  const form = new FormData();
  form.set("operations", JSON.stringify({ query: UPLOAD, variables: { file: null, ...variables } }));
  form.set("map", JSON.stringify({ 0: ["variables.file"] }));
  form.set("0", new Blob([new Uint8Array(bytes)]), filename);
  const encoded = new Response(form);
  const answer = await server.app.inject({
    method: "POST",
    url: "/graphql",
    headers: {
      "content-type": encoded.headers.get("content-type") ?? "",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...extraHeaders,
    },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  return { status: answer.statusCode, body: answer.json(), headers: answer.headers };
}

async function gql(query: string, variables: Record<string, unknown>, token?: string) {
  const answer = await server.request("POST", "/graphql", { body: { query, variables }, token });
  expect(answer.status).toBe(200);
  return answer.body.data;
}

describe("uploadFile with an Idempotency-Key", () => {
  it("stores a replayed upload once and answers the first result; other bytes under the key are 409", async () => {
    const files = () => server.services.db.driveFile.count({ where: { ownerId: BigInt(alice.id) } });
    const key = { "idempotency-key": "gql-upload-1" };
    const png = await image("png", 20, 20);
    const before = await files();
    const first = await upload(png, "once.png", {}, alice.token, key);
    const again = await upload(png, "once.png", {}, alice.token, key);
    expect(first.body.data.uploadFile.__typename).toBe("MutationUploadFileSuccess");
    expect(again.body).toEqual(first.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(await files()).toBe(before + 1);
    const other = await upload(await image("png", 21, 20), "once.png", {}, alice.token, key);
    expect({ status: other.status, body: other.body }).toEqual({
      status: 409,
      body: { error: "IDEMPOTENCY_KEY_REUSED" },
    });
    expect(await files()).toBe(before + 1);
    expect(fs.readdirSync(server.services.storage.scratchDir)).toEqual([]);
  });
});

describe("uploadFile", () => {
  it("stores an image with its sniffed type, blurhash and thumbnail, like POST /drive", async () => {
    const { status, body } = await upload(await image("png", 800, 600), "drawing.jpg", { nsfw: true }, alice.token);
    expect(status).toBe(200);
    const result = body.data.uploadFile;
    expect(result.__typename).toBe("MutationUploadFileSuccess");
    expect(result.data).toMatchObject({
      name: "drawing.jpg",
      authorId: alice.id,
      mime: "image/png",
      nsfw: true,
      url: `http://murmur.test/files/${result.data.id}`,
      thumbnail: `http://murmur.test/files/${result.data.id}/thumbnail`,
    });
    expect(result.data.hash).not.toBe("");
    const rest = await server.request("GET", `/drive/${result.data.id}`, { token: alice.token });
    expect(rest.body).toMatchObject({ id: result.data.id, mime: "image/png", hash: result.data.hash, nsfw: true });
    const bytes = await server.request("GET", `/files/${result.data.id}`);
    expect(bytes.status).toBe(200);
  });

  it("takes the name argument over the file's name, and has no thumbnail for audio", async () => {
    const { body } = await upload(wav(), "a.bin", { name: "voice.wav" }, alice.token);
    expect(body.data.uploadFile.data).toMatchObject({
      name: "voice.wav",
      mime: "audio/wav",
      hash: "",
      thumbnail: null,
    });
  });

  it("refuses an anonymous multipart request without a CSRF header: a form on another site cannot post it", async () => {
    const png = await image("png", 20, 20);
    const answer = await upload(png, "x.png", {});
    expect(answer.status).toBe(403);
    expect(answer.body.errors[0].message).toMatch(/CSRF/);
  });

  it("answers the REST codes: UNAUTHORIZED (HTTP 401), UNSUPPORTED_FILE_TYPE, FILE_NAME_TOO_LONG, FILE_SIZE_TOO_BIG", async () => {
    const png = await image("png", 20, 20);
    const anonymous = await upload(png, "x.png", {}, undefined, { "x-graphql-yoga-csrf": "1" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers["www-authenticate"]).toBe("Bearer");
    expect(anonymous.body.errors[0].extensions.code).toBe("UNAUTHORIZED");
    expect(
      (await upload(Buffer.from("<html><script>alert(1)</script>"), "x.png", {}, alice.token)).body.data.uploadFile
        .code,
    ).toBe("UNSUPPORTED_FILE_TYPE");
    expect((await upload(png, "x.png", { name: "n".repeat(257) }, alice.token)).body.data.uploadFile.code).toBe(
      "FILE_NAME_TOO_LONG",
    );
    const before = await server.services.db.driveFile.count();
    const huge = Buffer.alloc(101 * 1024 * 1024);
    png.copy(huge);
    const hugeAnswer = await upload(huge, "huge.png", {}, alice.token);
    expect(hugeAnswer.body.data.uploadFile.code).toBe("FILE_SIZE_TOO_BIG");
    expect(await server.services.db.driveFile.count()).toBe(before);
  });
});

describe("drive queries and mutations", () => {
  it("lists, reads, flags and deletes the caller's files only", async () => {
    const { body } = await upload(await image("webp", 50, 50), "w.webp", {}, bob.token);
    const id = body.data.uploadFile.data.id;
    const list = await gql(`{ driveFiles { ... on DriveFileConnection { edges { node { id } } } } }`, {}, bob.token);
    expect(list.driveFiles.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(id);

    const other = await gql(
      `query ($id: ID!) { driveFile(id: $id) { ... on DomainError { code } } }`,
      { id },
      alice.token,
    );
    expect(other.driveFile.code).toBe("FILE_NOT_FOUND");

    const flagged = await gql(
      `mutation ($id: ID!) { updateFile(id: $id, nsfw: true) { ... on MutationUpdateFileSuccess { data { nsfw } } } }`,
      { id },
      bob.token,
    );
    expect(flagged.updateFile.data.nsfw).toBe(true);

    const deleted = await gql(
      `mutation ($id: ID!) { deleteFile(id: $id) { ... on MutationDeleteFileSuccess { data } ... on DomainError { code } } }`,
      { id },
      bob.token,
    );
    expect(deleted.deleteFile.data).toBe(true);
    expect((await server.request("GET", `/files/${id}`)).status).toBe(404);
  });
});

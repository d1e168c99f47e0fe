// A real S3 server for tests: s3rver (an S3 implementation in Node) on a free port, with one
// bucket, its objects in a temporary folder. Never a mock: the AWS SDK speaks HTTP to it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";

export interface TestS3 {
  /** The environment that points Murmur at it. */
  env: Record<string, string>;
  /** The keys in the bucket now. */
  keys(): Promise<string[]>;
  close(): Promise<void>;
}

export const TEST_BUCKET = "murmur-test";

export async function startTestS3(): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "murmur-s3-"));
  const server = new S3rver({
    port: 0,
    address: "127.0.0.1",
    silent: true,
    directory,
    configureBuckets: [{ name: TEST_BUCKET, configs: [] }],
  });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const env = {
    S3_BUCKET: TEST_BUCKET,
    S3_ENDPOINT: endpoint,
    S3_REGION: "us-east-1",
    // s3rver's own credentials.
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER",
    S3_FORCE_PATH_STYLE: "true",
  };
  const client = new S3Client({
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
  });
  return {
    env,
    async keys() {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: TEST_BUCKET }));
      return (listed.Contents ?? []).map((o) => o.Key ?? "").sort();
    },
    async close() {
      client.destroy();
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

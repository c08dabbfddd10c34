/**
 * The real descriptors for server reflection (so grpcurl needs no proto files): the
 * FileDescriptorSets `make generate` builds with `buf build` into generated/descriptors/ —
 * berth.v1 with its well-known-type imports (google/protobuf/struct.proto) and grpc.health.v1 —
 * with buf's map entries, json names and comments intact (issue 13; proto-loader's re-derived
 * descriptors lost the WKT imports and broke map entries).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-info.js';

/** The descriptor set files under generated/descriptors/, in load order. */
export const DESCRIPTOR_FILES = ['berth.binpb', 'health.binpb'];

/** What @grpc/reflection reads from a package definition: encoded FileDescriptorProtos. */
export type ReflectionRoot = Record<string, { fileDescriptorProtos: Buffer[] }>;

/** generated/descriptors/ of this package (found from package.json's folder, for src/ and dist/ alike). */
export function descriptorDir(): string {
  return join(PACKAGE_ROOT, 'generated', 'descriptors');
}

/**
 * Loads every file of the descriptor sets as the exact bytes buf wrote (a FileDescriptorSet is
 * `repeated FileDescriptorProto file = 1`, so each file is one length-delimited field 1).
 * @throws Error when a set is missing (run `make generate`) or is not a FileDescriptorSet.
 */
export function loadDescriptors(dir = descriptorDir()): ReflectionRoot {
  const root: ReflectionRoot = {};
  for (const name of DESCRIPTOR_FILES)
    root[name] = { fileDescriptorProtos: splitFileDescriptorSet(readFileSync(join(dir, name)), name) };
  return root;
}

/**
 * The encoded FileDescriptorProtos of an encoded FileDescriptorSet. @throws Error on any other field or a truncated
 * set.
 */
export function splitFileDescriptorSet(set: Buffer, what = 'descriptor set'): Buffer[] {
  const files: Buffer[] = [];
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (at >= set.length) break;
      const b = set[at++];
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    throw new Error(`${what}: truncated varint at byte ${at}`);
  };
  while (at < set.length) {
    const tag = varint();
    if (tag !== 0x0a) throw new Error(`${what}: not a FileDescriptorSet (tag ${tag} at byte ${at})`);
    const len = varint();
    if (at + len > set.length) throw new Error(`${what}: truncated file at byte ${at}`);
    files.push(set.subarray(at, at + len));
    at += len;
  }
  return files;
}

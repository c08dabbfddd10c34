/**
 * The real descriptors for server reflection (so grpcurl needs no proto files): the
 * FileDescriptorSets `make generate` builds with `buf build` into generated/descriptors/ —
 * berth.v1 with its well-known-type imports (google/protobuf/struct.proto) and grpc.health.v1 —
 * with buf's map entries, json names and comments intact (issue 13; proto-loader's re-derived
 * descriptors lost the WKT imports and broke map entries).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
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
 * Loads every file of the descriptor sets as the exact bytes buf wrote.
 * @throws Error when a set is missing (run `make generate`) or is not a FileDescriptorSet.
 */
export function loadDescriptors(dir = descriptorDir()): ReflectionRoot {
  const root: ReflectionRoot = {};
  for (const name of DESCRIPTOR_FILES)
    root[name] = { fileDescriptorProtos: splitFileDescriptorSet(readFileSync(join(dir, name)), name) };
  return root;
}

/**
 * The encoded FileDescriptorProtos of an encoded FileDescriptorSet (`repeated FileDescriptorProto file = 1`), as
 * views of its bytes. @throws Error on any other field or a truncated set.
 */
export function splitFileDescriptorSet(set: Buffer, what = 'descriptor set'): Buffer[] {
  const files: Buffer[] = [];
  const reader = new BinaryReader(set);
  try {
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field !== 1 || wireType !== WireType.LengthDelimited)
        throw new Error(`not a FileDescriptorSet (field ${field} wire type ${wireType} at byte ${reader.pos})`);
      files.push(reader.bytes() as Buffer); // a Buffer's subarray is a Buffer
    }
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
  return files;
}

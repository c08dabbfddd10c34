/**
 * Loads the .proto files with proto-loader for server reflection (so grpcurl needs no proto
 * files), including grpc.health.v1 from grpc-health-check.
 */
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { dirname, join } from 'node:path';
import { PACKAGE_ROOT } from '../package-info.js';

/** Directory holding `berth/v1/*.proto`. */
export const PROTO_DIR = join(PACKAGE_ROOT, 'proto');

/** The package definition of berth.v1 plus grpc.health.v1. */
export function loadDescriptors(): PackageDefinition {
  return loadSync(
    ['berth/v1/placement.proto', 'berth/v1/worker.proto', healthProtoPath],
    { includeDirs: [PROTO_DIR, dirname(healthProtoPath)], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
}

/**
 * Test support: clients for the standard services berth also serves — grpc.health.v1 and
 * grpc.reflection.v1 — built with proto-loader from the protos their packages ship.
 */
import {
  credentials,
  loadPackageDefinition,
  makeGenericClientConstructor,
  type Client,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** Health client: `check` and `watch` as in grpc.health.v1. */
export interface HealthClient extends Client {
  check(req: { service: string }, cb: (err: ServiceError | null, res?: { status: string }) => void): void;
  watch(req: { service: string }): ClientReadableStream<{ status: string }>;
}

/** Creates a grpc.health.v1.Health client for `address`. */
export function healthClient(address: string): HealthClient {
  const Ctor = makeGenericClientConstructor(healthService, 'Health');
  return new Ctor(address, credentials.createInsecure()) as unknown as HealthClient;
}

/** Lists service names through grpc.reflection.v1 (as `grpcurl list` does). */
export async function listServices(address: string): Promise<string[]> {
  const root = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
  const def = loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [root], keepCase: true });
  const pkg = loadPackageDefinition(def) as unknown as {
    grpc: {
      reflection: {
        v1: {
          ServerReflection: new (
            a: string,
            c: ReturnType<typeof credentials.createInsecure>,
          ) => Client & {
            ServerReflectionInfo(): ClientDuplexStream<
              object,
              { list_services_response?: { service: { name: string }[] } }
            >;
          };
        };
      };
    };
  };
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
  try {
    return await new Promise<string[]>((resolve, reject) => {
      const call = client.ServerReflectionInfo();
      call.on('data', (res) => {
        resolve((res.list_services_response?.service ?? []).map((s: { name: string }) => s.name));
        call.end();
      });
      call.on('error', reject);
      call.write({ list_services: '' });
    });
  } finally {
    client.close();
  }
}

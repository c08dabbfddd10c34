/**
 * Test support: a generated PlacementService client whose every call carries a per-client token (SPEC R7), as a
 * client of `--client-tokens` would. The caller closes it.
 */
import { credentials, InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { PlacementServiceClient } from '../../generated/ts/berth/v1/placement.js';

/** A client of `address` sending `authorization: Bearer <token>` on every call. */
export function clientWithToken(address: string, token: string): PlacementServiceClient {
  const withToken: Interceptor = (options, next) =>
    new InterceptingCall(next(options), {
      start(metadata, listener, go) {
        metadata.set('authorization', `Bearer ${token}`);
        go(metadata, listener);
      },
    });
  return new PlacementServiceClient(address, credentials.createInsecure(), { interceptors: [withToken] });
}

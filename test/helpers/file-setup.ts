import { afterEach } from 'vitest';
import { eventMismatches } from './conformance.ts';
import { failOnAppsLeftOpen } from './open-apps.ts';

// Runs before every test file (vitest.config.ts setupFiles).
failOnAppsLeftOpen();

// An SSE event a test received that its declared schema does not describe fails that test
// (test/helpers/server.ts openEventSource checks each one as it arrives).
afterEach(() => {
  const found = eventMismatches.splice(0);
  if (found.length > 0) throw new Error(found.slice(0, 3).join('\n'));
});

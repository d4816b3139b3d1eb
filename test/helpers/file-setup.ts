import { failOnAppsLeftOpen } from './open-apps.ts';

// Runs before every test file (vitest.config.ts setupFiles).
failOnAppsLeftOpen();

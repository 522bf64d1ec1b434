import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "lib/**/*.test.ts",
      "handlers/**/*.test.ts",
      "stream-host/**/*.test.ts",
      "infra/**/*.test.ts",
      "scripts/**/*.test.ts",
      "web/**/*.test.ts",
    ],
    globalSetup: ["./lib/testing/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});

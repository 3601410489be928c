import { defineConfig } from "vitest/config";

// Unit tests cover the vscode-free modules of the extension (extension/src/*Model.ts and friends).
export default defineConfig({
  test: {
    include: ["extension/test/**/*.test.ts"],
    environment: "node",
    testTimeout: 20000,
  },
});

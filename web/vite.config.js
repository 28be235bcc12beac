// Builds the page into web/dist (committed; embedded into kvfit by cmake/server.cmake). No CDN: uPlot is bundled.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, sourcemap: false },
});

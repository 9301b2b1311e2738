// The console is served by agent-sandbox under /console/ (src/api/handlers_console.cc):
// absolute asset URLs there, no inline scripts or styles (the server's CSP allows none), no
// module preload polyfill (it would be an inline script), output where build-console.sh says.
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/console/',
  build: {
    outDir: process.env.ASB_CONSOLE_OUT || 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
  },
});

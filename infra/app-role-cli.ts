// Entry of the `app-role` bundle (dist/app-role/main.mjs): ensures the config store's least-privilege login.
import { main } from "./app-role.ts";

process.exitCode = await main();

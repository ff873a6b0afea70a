/**
 * The demo's tasks, each with what a developer would ask of an agent and what the agent would say
 * and do about it: the first prompt, two thoughts, the tool calls (ACP titles; scripts.ts reads
 * the kind from the first word) and the reply. The transcripts are made of these.
 */
export interface Story {
  title: string
  description: string
  /** The task repository's one source file is src/<area>.ts. */
  area: string
  prompt: string
  thoughts: [string, string]
  tools: string[]
  reply: string
}

export const STORIES: readonly Story[] = [
  {
    title: 'Fix login redirect loop after SSO timeout', area: 'auth', description: 'Users bounce between /login and /callback when the IdP session expires.',
    prompt: 'Users get stuck bouncing between /login and /callback after their SSO session expires. Can you find out why and fix it?',
    thoughts: [
      'The callback sees the expired assertion and redirects to /login, but /login still finds the old session cookie and sends the user straight back.',
      'So the callback should clear the session cookie before it redirects, and a test should replay an expired callback.',
    ],
    tools: ['Read src/auth/callback.ts', 'Search for "redirect(" in src/auth', 'Edit src/auth/callback.ts', 'Run npm test -- auth/callback'],
    reply: 'Found it: on an expired assertion the callback redirected to /login without clearing the session cookie. It clears the cookie first now, and a new test replays an expired callback.',
  },
  {
    title: 'Add dark mode toggle to settings', area: 'ui', description: 'Persist the choice per user and respect prefers-color-scheme.',
    prompt: 'Add a dark mode toggle to the settings page. Remember the choice per user, and follow the system setting until they pick one.',
    thoughts: [
      'The colours are already CSS variables in the root stylesheet, so a data-theme attribute on the html element can switch them.',
      'The choice belongs with the user preferences; until it is set, the prefers-color-scheme media query decides.',
    ],
    tools: ['Read src/ui/settings/SettingsPage.tsx', 'Search for "--color-" in src/ui/styles', 'Edit src/ui/theme.ts', 'Run npm test -- settings'],
    reply: "Settings has a Theme switch now (System, Light, Dark). The choice is saved in the user's preferences; with System the page follows the operating system.",
  },
  {
    title: 'Migrate billing webhooks to the v2 API', area: 'billing', description: 'The v1 endpoint is retired next quarter.',
    prompt: 'Move our billing webhooks over to the v2 API before v1 is retired. The handlers should behave exactly as they do today.',
    thoughts: [
      'v2 signs payloads with a timestamped HMAC instead of the shared secret header, so signature verification changes first.',
      'The event names map one to one except invoice.payment_failed, which became invoice.failed; two handlers switch on it.',
    ],
    tools: ['Read src/billing/webhooks.ts', 'Fetch the v2 webhook migration guide', 'Edit src/billing/verify-signature.ts', 'Run npm test -- billing'],
    reply: 'The endpoint verifies v2 signatures now (timestamp plus HMAC, five minutes of tolerance) and maps the renamed event. The handlers are unchanged, and the tests replay recorded v2 payloads.',
  },
  {
    title: 'Speed up CSV export for large workspaces', area: 'export', description: 'Exports over 50k rows time out; stream them instead.',
    prompt: 'CSV exports over about 50k rows time out. Please stream the export instead of building it in memory.',
    thoughts: [
      'The exporter loads every row with one findMany and joins a single huge string, so time and memory grow with the workspace.',
      'Reading with a cursor in batches of a thousand and piping through a CSV transform keeps memory flat and sends the first bytes at once.',
    ],
    tools: ['Read src/export/csv.ts', 'Search for "findMany" in src/export', 'Edit src/export/csv.ts', 'Run npm run bench -- export'],
    reply: 'The export streams rows in batches of 1,000 straight to the response now. 200k rows finish in 9 seconds with flat memory instead of timing out after 30.',
  },
  {
    title: 'Fix the flaky login test on Safari', area: 'login', description: 'login.spec.ts fails about once in 30 runs on the WebKit job.',
    prompt: 'Fix the flaky login test on Safari. It fails about once in 30 CI runs, only on the WebKit job.',
    thoughts: [
      'The test waits on a fixed timeout of 2 seconds; the login redirect takes longer on WebKit when the runner is busy.',
      'Waiting for the dashboard URL instead of a fixed time makes it deterministic, and the app code needs no change.',
    ],
    tools: ['Read test/e2e/login.spec.ts', 'Search for "waitForTimeout" in test/e2e', 'Edit test/e2e/login.spec.ts', 'Run npx playwright test login --project=webkit --repeat-each=50'],
    reply: 'The test slept for a fixed 2 seconds and raced the redirect. It now waits for the dashboard URL; 50 repeated runs on WebKit passed.',
  },
  {
    title: 'Rate-limit password reset emails', area: 'auth', description: 'At most 3 per hour per address.',
    prompt: "Limit password reset emails to three per hour per address, and don't reveal whether the address has an account.",
    thoughts: [
      'There is already a Redis limiter for login attempts; a second bucket keyed by a hash of the email fits the same helper.',
      'The endpoint must answer the same way whether the caller is limited or the address is unknown, or it leaks which accounts exist.',
    ],
    tools: ['Read src/auth/password-reset.ts', 'Read src/auth/rate-limit.ts', 'Edit src/auth/password-reset.ts', 'Run npm test -- password-reset'],
    reply: 'Reset emails are limited to three per hour per address. The endpoint always answers 202, so it reveals neither the limit nor whether the account exists.',
  },
  {
    title: 'Upgrade React Router to v7', area: 'routes', description: 'Follow the migration guide; keep lazy routes.',
    prompt: 'Upgrade React Router to v7 following the migration guide, and keep the lazy-loaded routes working.',
    thoughts: [
      'Most routes already use the data router, so the upgrade is mostly the future flags v6 warned about and the new import paths.',
      "The lazy routes go through our own wrapper around React.lazy; v7's route.lazy can replace it.",
    ],
    tools: ['Fetch the React Router v7 upgrade guide', 'Search for "react-router-dom" in src', 'Edit src/ui/routes.tsx', 'Run npm run build'],
    reply: 'React Router is on v7. The imports moved to react-router, the lazy routes use route.lazy instead of our wrapper, and the build and the route tests pass.',
  },
  {
    title: 'Audit log for admin actions', area: 'admin', description: 'Every admin mutation writes who, what and when.',
    prompt: 'Every admin mutation should write an audit log entry: who did it, what changed, and when.',
    thoughts: [
      'All admin mutations pass through the requireAdmin guard, the one place that sees every call.',
      'Writing the entry in the same transaction as the change means a failed mutation leaves no entry behind.',
    ],
    tools: ['Read src/admin/guard.ts', 'Search for "requireAdmin(" in src', 'Edit src/admin/audit-log.ts', 'Run npm test -- admin'],
    reply: 'Admin mutations write an audit entry (who, what, before and after) in the same transaction as the change, and admins can page through them with the new auditLog query.',
  },
  {
    title: 'Search: typo-tolerant matching', area: 'search', description: 'Use trigram similarity for titles.',
    prompt: 'Make task search tolerate typos: "dahsboard" should still find "Dashboard".',
    thoughts: [
      'Search runs an ILIKE on the title, which cannot match a swapped pair of letters.',
      'Trigram similarity with a GIN index tolerates typos and stays fast; exact prefix matches should still rank first.',
    ],
    tools: ['Read src/search/query.ts', 'Run EXPLAIN ANALYZE on the search query', 'Edit prisma/migrations/add_trgm_index.sql', 'Run npm test -- search'],
    reply: 'Search ranks exact prefix matches first, then titles with a trigram similarity above 0.3, so "dahsboard" finds "Dashboard". A GIN index keeps it under 20 ms on 100k tasks.',
  },
  {
    title: 'Remove the legacy v1 REST endpoints', area: 'api', description: 'Nothing has called them for 90 days.',
    prompt: 'Remove the legacy v1 REST endpoints. The access logs show nothing has called them in 90 days.',
    thoughts: [
      'There are eleven routes under /api/v1; three share serializers with the GraphQL layer, so those helpers have to stay.',
      'The OpenAPI file and the SDK docs still describe v1, so they go too.',
    ],
    tools: ['Search for "/api/v1" in src', 'Delete src/api/v1/', 'Edit docs/openapi.yaml', 'Run npm test'],
    reply: 'The /api/v1 routes and their tests are gone (2,140 lines). The shared serializers moved to src/api/serializers.ts, and /api/v1 answers 410 Gone.',
  },
  {
    title: 'Cache avatar thumbnails at the edge', area: 'media', description: 'Cache-Control plus ETag; purge on upload.',
    prompt: 'Avatar thumbnails come from the origin on every page view. Make the CDN cache them, and purge them when someone uploads a new one.',
    thoughts: [
      'The thumbnail route sends Cache-Control: no-store, probably left over from when avatars were behind authentication.',
      'The URLs are stored in user rows, so an ETag with a purge on upload is a smaller change than content-hashed URLs.',
    ],
    tools: ['Read src/media/thumbnails.ts', 'Edit src/media/thumbnails.ts', 'Edit src/media/upload.ts', 'Run npm test -- media'],
    reply: "Thumbnails are served with a one-day public Cache-Control and an ETag, and an upload purges the user's thumbnail URLs from the CDN.",
  },
  {
    title: 'Onboarding checklist for new workspaces', area: 'onboarding', description: 'Five steps, dismissible, tracked per workspace.',
    prompt: 'Add an onboarding checklist to new workspaces: five steps, dismissible, with progress saved per workspace.',
    thoughts: [
      'Each step can be read from data the workspace already has, like a first task or an invited member, so only the dismissal needs storing.',
      'The checklist belongs above the task board and should disappear for good once it is dismissed or complete.',
    ],
    tools: ['Read src/ui/board/Board.tsx', 'Edit src/ui/onboarding/Checklist.tsx', 'Edit src/api/workspace-settings.ts', 'Run npm test -- onboarding'],
    reply: "New workspaces show a five-step checklist above the board. The progress comes from the workspace's own data, and dismissing it is saved per workspace.",
  },
  {
    title: 'Fix timezone drift in recurring reminders', area: 'reminders', description: 'Reminders created in DST fire an hour late in winter.',
    prompt: 'Recurring reminders created in summer fire an hour late in winter. Please fix the daylight saving handling.',
    thoughts: [
      'The next occurrence is computed by adding 24 hours in UTC, so the wall-clock time drifts at every daylight saving change.',
      "Computing it in the reminder's own time zone keeps a 9:00 reminder at 9:00 across the change.",
    ],
    tools: ['Read src/scheduler/recurrence.ts', 'Search for "24 * 60 * 60" in src/scheduler', 'Edit src/scheduler/recurrence.ts', 'Run npm test -- recurrence'],
    reply: "Recurrences are computed in the reminder's time zone now, so 9:00 stays 9:00 across daylight saving. The tests cover both changes in Berlin and New York.",
  },
  {
    title: 'Paginate the members list', area: 'members', description: 'Cursor pagination, 50 per page.',
    prompt: 'The members page loads every member at once. Add cursor pagination with 50 per page.',
    thoughts: [
      'Members are ordered by name, which is not unique, so the cursor needs the name and the id to be stable.',
      'The task list already has an infinite list component; reusing it keeps the two pages consistent.',
    ],
    tools: ['Read src/admin/members.ts', 'Edit src/admin/members.ts', 'Edit src/ui/admin/MembersPage.tsx', 'Run npm test -- members'],
    reply: 'The members query takes first and after with a (name, id) cursor, 50 per page, and the page loads more as you scroll.',
  },
  {
    title: 'Add retries to the S3 uploader', area: 'uploads', description: 'Exponential backoff on 5xx and throttling.',
    prompt: 'Uploads to S3 fail outright on a 503. Add retries with exponential backoff for server errors and throttling.',
    thoughts: [
      'The uploader calls PutObject once and turns any error into a 500 for the user.',
      "The SDK's standard retry strategy already handles SlowDown and 5xx answers; it needs turning on, with a cap so nobody waits a minute.",
    ],
    tools: ['Read src/media/s3-uploader.ts', 'Fetch the AWS SDK retry strategy docs', 'Edit src/media/s3-uploader.ts', 'Run npm test -- s3-uploader'],
    reply: 'The uploader retries server errors and throttling up to four times with jittered exponential backoff, eight seconds at most. Client errors still fail at once.',
  },
  {
    title: 'Document the public GraphQL API', area: 'docs', description: 'Examples for every mutation, generated from the schema.',
    prompt: 'Write documentation for our public GraphQL API with an example for every mutation. Generate it from the schema so it stays current.',
    thoughts: [
      'Most fields already have descriptions in the schema; fourteen mutations have none, so those need writing first.',
      'A script can render one page per type from introspection and take the examples from the integration tests.',
    ],
    tools: ['Read schema.graphql', 'Search for "mutation " in test/api', 'Edit scripts/generate-api-docs.ts', 'Run npm run docs'],
    reply: 'docs/api/ is generated from the schema by npm run docs: a page per type, and an example for every mutation taken from the integration tests. CI fails when the docs are out of date.',
  },
  {
    title: 'Keyboard shortcuts for the task board', area: 'board', description: 'j/k to move, enter to open, ? for help.',
    prompt: 'Add keyboard shortcuts to the task board: j and k to move, Enter to open, and ? for a help overlay.',
    thoughts: [
      'Shortcuts must not fire while someone types in a field, so one document listener that checks the event target is simplest.',
      'The selected row should scroll into view and be announced to screen readers.',
    ],
    tools: ['Read src/ui/board/TaskList.tsx', 'Edit src/ui/board/useShortcuts.ts', 'Edit src/ui/board/HelpOverlay.tsx', 'Run npm test -- shortcuts'],
    reply: 'j and k move the selection, Enter opens the task, and ? lists the shortcuts. They stay quiet while you type in a field, and the selected row is announced.',
  },
  {
    title: 'Reduce Docker image size below 200 MB', area: 'docker', description: 'Multi-stage build, distroless runtime.',
    prompt: 'Our Docker image is 1.1 GB. Get it under 200 MB with a multi-stage build.',
    thoughts: [
      'The image builds from node:20 and keeps the dev dependencies and the npm cache.',
      'A build stage that compiles, then a distroless runtime with production dependencies only, should land near 150 MB.',
    ],
    tools: ['Read Dockerfile', 'Edit Dockerfile', 'Run docker build -t app:slim .', 'Run docker images app:slim'],
    reply: 'The image is 164 MB now: a build stage compiles, and the runtime stage is distroless Node 20 with production dependencies only. The container starts and passes its health check.',
  },
  {
    title: 'Alert when the job queue backs up', area: 'jobs', description: 'Page when the oldest job is older than 10 minutes.',
    prompt: 'Page the on-call engineer when the oldest job in the queue is more than ten minutes old.',
    thoughts: [
      'The worker exports the queue length but not the age of the oldest job, and the length alone says little at night.',
      'A gauge of that age and an alert rule with a five-minute window avoids paging on a short spike.',
    ],
    tools: ['Read src/jobs/metrics.ts', 'Edit src/jobs/metrics.ts', 'Edit ops/alerts/queue.yaml', 'Run promtool check rules ops/alerts/queue.yaml'],
    reply: 'The worker exports the age of its oldest job, and a new alert pages when it stays above ten minutes for five. The rule file passes promtool.',
  },
  {
    title: 'Support SAML single sign-on', area: 'sso', description: 'Okta and Azure AD first.',
    prompt: 'Add SAML single sign-on, starting with Okta and Azure AD.',
    thoughts: [
      'The OIDC login already has account linking and sessions; SAML only needs its own start and assertion endpoints.',
      'Each assertion must be checked for its signature, audience and expiry, and a replayed one rejected.',
    ],
    tools: ['Read src/auth/oidc.ts', 'Fetch the Okta SAML setup guide', 'Edit src/auth/saml.ts', 'Run npm test -- saml'],
    reply: 'Workspaces can configure SAML from a metadata URL. Assertions are verified for signature, audience and expiry, replays are rejected, and Okta and Azure AD are tested with recorded assertions.',
  },
  {
    title: 'Fix memory leak in the websocket hub', area: 'realtime', description: 'Heap grows by ~40 MB per hour under load.',
    prompt: "The websocket hub's heap grows by about 40 MB an hour under load. Find the leak and fix it.",
    thoughts: [
      'Two heap snapshots an hour apart show thousands of closures from subscribe() kept alive, each holding a socket.',
      'The hub removes a closed socket from its room but not from the per-user index, so closed sockets stay reachable.',
    ],
    tools: ['Run node --inspect scripts/load-hub.js', 'Read src/realtime/hub.ts', 'Edit src/realtime/hub.ts', 'Run npm test -- hub'],
    reply: 'Closed sockets stayed in the per-user index. They are removed on close now, a test checks the index is empty after 1,000 connections, and the heap stays flat under the load script.',
  },
  {
    title: 'Invoice PDF: localize currency formats', area: 'invoices', description: 'Use Intl.NumberFormat with the customer locale.',
    prompt: "Invoice PDFs always show amounts like $1,234.50. Format them for the customer's locale and currency.",
    thoughts: [
      'The PDF template formats amounts with toFixed(2) and a hard-coded dollar sign.',
      "Intl.NumberFormat with the customer's locale and the invoice currency handles symbols, separators and currencies without cents.",
    ],
    tools: ['Read src/billing/invoice-pdf.ts', 'Search for "toFixed(2)" in src/billing', 'Edit src/billing/format-money.ts', 'Run npm test -- invoice-pdf'],
    reply: "Amounts follow the customer's locale and the invoice currency now: 1.234,50 € in Germany, ¥1,235 in Japan. Snapshot tests cover five locales.",
  },
  {
    title: 'Bulk archive tasks from the board', area: 'archive', description: 'Select many, archive in one request.',
    prompt: 'Let people select several tasks on the board and archive them in one go.',
    thoughts: [
      'There is no bulk mutation, and archiving fifty tasks one request at a time would be slow and could half fail.',
      'An archiveTasks mutation that runs in one transaction, and shift-click selection on the board.',
    ],
    tools: ['Read src/ui/board/Board.tsx', 'Edit src/api/tasks/archive.ts', 'Edit src/ui/board/SelectionBar.tsx', 'Run npm test -- archive'],
    reply: 'Shift-click selects tasks, and the selection bar archives them with one archiveTasks mutation, all or nothing. Undo brings them back for ten seconds.',
  },
  {
    title: 'Nightly database backup verification', area: 'backups', description: 'Restore into a scratch instance and run checks.',
    prompt: "Set up a nightly job that restores last night's backup into a scratch database and checks it.",
    thoughts: [
      'Backups are taken every night but never restored, so nobody knows whether they work.',
      'The job can restore into a throwaway instance, compare the row counts of the main tables, and report to the ops channel.',
    ],
    tools: ['Read ops/backup/backup.sh', 'Edit ops/backup/verify-restore.sh', 'Edit .github/workflows/backup-verify.yml', 'Run ./ops/backup/verify-restore.sh --dry-run'],
    reply: 'A nightly workflow restores the latest backup into a scratch database, checks row counts and migrations, and posts the result to #ops. The dry run passed.',
  },
  {
    title: 'Add OpenTelemetry tracing to the API', area: 'tracing', description: 'Spans for resolvers and database calls.',
    prompt: 'Add OpenTelemetry tracing to the API, with a span per resolver and per database call.',
    thoughts: [
      'The auto-instrumentation covers HTTP and Postgres; resolvers need a small wrapper in the schema builder.',
      'A span for every trivial field would drown the traces, so only resolvers that do I/O get one.',
    ],
    tools: ['Read src/server/index.ts', 'Edit src/observability/tracing.ts', 'Edit src/schema/builder.ts', 'Run npm test -- tracing'],
    reply: 'Traces cover each request, every resolver that does I/O and each database call, exported over OTLP when an endpoint is configured. Without one nothing changes.',
  },
  {
    title: 'Mobile: fix overlapping header on iOS', area: 'layout', description: 'Safe-area insets are ignored on notch devices.',
    prompt: 'On iPhones with a notch the header slides under the status bar. Please fix it.',
    thoughts: [
      'The viewport meta tag asks for viewport-fit=cover, but the header ignores the safe-area insets.',
      'Padding the header by env(safe-area-inset-top), and by the side insets in landscape, should be enough.',
    ],
    tools: ['Read src/ui/layout/Header.tsx', 'Search for "viewport-fit" in public', 'Edit src/ui/layout/header.css', 'Run npm run test:visual -- header'],
    reply: 'The header pads by the safe-area insets now, so it sits below the notch in portrait and clear of it in landscape. The visual tests cover an iPhone viewport.',
  },
  {
    title: 'Clean up feature flags older than 6 months', area: 'flags', description: 'Remove dead branches and their tests.',
    prompt: 'Clean up the feature flags older than six months: keep the path that won, and remove the dead one with its tests.',
    thoughts: [
      'Nine flags are older than six months; seven are on for everyone and two are off everywhere.',
      'For the two that are off the new code goes; for the other seven the old path and its tests go.',
    ],
    tools: ['Run flags list --older-than 180d', 'Search for "isEnabled(" in src', 'Edit src/platform/flags.ts', 'Run npm test'],
    reply: 'Removed nine stale flags: seven kept their enabled path and two lost the unused one. 31 files changed, 860 lines fewer, and the tests pass.',
  },
]

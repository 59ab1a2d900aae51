/**
 * MCP revision 2026-07-28's `subscriptions/listen` (schema/2026-07-28/schema.ts,
 * basic/patterns/subscriptions): a request whose answer is a long-lived event stream of the
 * change notifications its filter opts in to. The SDK the registry uses (1.x) does not know the
 * revision, so these are the registry's own schemas of it.
 */
import { z } from 'zod';

/**
 * Which notifications a stream carries; each is opt-in. Loose, as the revision's other params:
 * a field of a later revision is not a reason to refuse the stream.
 */
export const SubscriptionFilterSchema = z.looseObject({
  /** `notifications/tools/list_changed` when the caller's tool list changes. */
  toolsListChanged: z.boolean().optional(),
  /** `notifications/prompts/list_changed`; the registry offers no prompts. */
  promptsListChanged: z.boolean().optional(),
  /** `notifications/resources/list_changed`; the registry offers no resources. */
  resourcesListChanged: z.boolean().optional(),
  /** `notifications/resources/updated` for these URIs; the registry offers no resources. */
  resourceSubscriptions: z.array(z.string()).optional(),
});
export type SubscriptionFilter = z.infer<typeof SubscriptionFilterSchema>;

/** The request; `params._meta` (the revision's envelope) is checked by src/http/mcp/modern.ts. */
export const SubscriptionsListenRequestSchema = z.looseObject({
  method: z.literal('subscriptions/listen'),
  params: z.looseObject({
    /** The notifications the client opts in to. */
    notifications: SubscriptionFilterSchema,
  }),
});

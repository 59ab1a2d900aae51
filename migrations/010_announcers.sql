-- Self-announcing tool services (src/announce/): who registered a tool or tool service through
-- an announcement ('announcer:<subject>'), or NULL for an operator. An announcer writes only
-- what is its own, so it can never write over an operator's tool.
ALTER TABLE tools ADD COLUMN owner TEXT;
ALTER TABLE tool_services ADD COLUMN owner TEXT;

-- Placeholder on branch h-win only: migrations may have no gaps, and issue 34's usage minutes
-- were given number 017. Drop this file when merging the branch that owns migration 015.
SELECT 1;

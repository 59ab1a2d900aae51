-- A placeholder (issue 29): migration 013 is another change's (the pinned upstream tools), made
-- on another branch, and migrations must be numbered without gaps. Drop this file when that
-- branch's 013 is merged; it does nothing.
SELECT 1;

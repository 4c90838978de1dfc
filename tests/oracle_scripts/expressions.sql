-- Expressions in VALUES, SET and WHERE with MySQL's semantics.
CREATE TABLE calc (id INT PRIMARY KEY, s VARCHAR(40), n DECIMAL(12, 4), i BIGINT, dt DATETIME);
INSERT INTO calc VALUES
    (1, CONCAT('a', 1, 'b'), 7 / 2, 7 DIV 2, '2024-01-31 10:00:00'),
    (2, CONCAT_WS('-', 'x', NULL, 'y'), 1 / 3, -7 % 3, DATE_ADD('2024-01-31', INTERVAL 1 MONTH)),
    (3, IFNULL(NULL, 'dflt'), COALESCE(NULL, NULL, 2.5), IF(1 > 2, 10, 20), '2024-03-01' + INTERVAL 1 DAY),
    (4, UPPER(SUBSTRING('hello world', 7)), ROUND(2.34567, 3), '12' + 3, DATE_SUB('2024-03-01 00:00:00', INTERVAL 1 SECOND)),
    (5, LPAD(HEX(255), 4, '0'), ABS(-3.25), CASE WHEN NULL THEN 1 WHEN 2 > 1 THEN 2 END, NULL),
    (6, REPLACE('aXbXc', 'X', '-'), TRUNCATE(9.8765, 2), LENGTH('é'), NULL),
    (7, LEFT('abcdef', 3), GREATEST(1, 5, 3), LEAST(4, 2, 8), NULL),
    (8, TRIM('  pad  '), POW(2, 10), CHAR_LENGTH('é'), NULL);
UPDATE calc SET i = i * 2 + 1, n = n - 0.5 WHERE id IN (1, 3, 5) OR s IS NULL;
UPDATE calc SET s = CONCAT(s, '!') WHERE id BETWEEN 2 AND 4 AND NOT (n > 100);
DELETE FROM calc WHERE s LIKE 'A%' ESCAPE '\\';
UPDATE calc SET dt = '2000-01-01' WHERE dt IS NULL AND id <> 8;
CREATE TABLE refs (a INT, b INT, c INT DEFAULT 7);
INSERT INTO refs (a, b) VALUES (1, a + 1), (5, a * c);
CREATE TABLE divs (v INT);
INSERT INTO divs VALUES (10 DIV 3), (7 MOD 4);
-- date arithmetic as text: a date moved by days or more stays a date
CREATE TABLE moved (id INT PRIMARY KEY, s VARCHAR(40));
INSERT INTO moved VALUES
    (1, '2024-01-31' + INTERVAL 1 DAY), (2, INTERVAL 1 DAY + '2024-01-31'),
    (3, '2024-01-31' + INTERVAL 24 HOUR), (4, DATE_ADD('2024-01-31', INTERVAL 1 WEEK)),
    (5, '2024-01-31 10:00' + INTERVAL 1 DAY), (6, DATE_SUB('2024-03-31', INTERVAL 1 MONTH)),
    (7, INTERVAL 2 MONTH + '2024-01-31 10:00:00');
INSERT INTO moved VALUES
    (8, ADDDATE('2024-01-31', INTERVAL 1 MONTH)), (9, ADDDATE('2024-01-31', 3)),
    (10, SUBDATE('2024-03-01 10:00:00', 1)), (11, SUBDATE('2024-03-01', INTERVAL 2 HOUR));
-- years before 1000 keep their four digits ('99-01-02' was read back as 1999); a DECIMAL as
-- text has no exponent ('0E-7') and no sign on zero
INSERT INTO moved VALUES
    (12, DATE('0001-01-01') + INTERVAL 1 DAY), (13, DATE_ADD('0099-01-01', INTERVAL 1 DAY)),
    (14, CAST('0099-01-01' AS DATE)), (15, DATE('0099-12-31 10:00:00')),
    (16, CONCAT(0.000 / 1, '')), (17, CAST(-0.000 * 1 AS CHAR));
-- aggregates beside expressions without columns, under ONLY_FULL_GROUP_BY (TiDB's default);
-- their values go into a table, so the oracle compares them
SET sql_mode = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';
SELECT 1 + 1, COUNT(*) FROM calc;
SELECT 'a' AS x, COUNT(*) FROM calc;
SELECT NOW(), COUNT(*) FROM calc WHERE id > 100;
SELECT 2 * 3, COUNT(*), 'k', SUM(id) INTO @six, @rows, @k, @ids FROM calc;
SELECT COUNT(*), MAX(id) INTO @none, @top FROM calc WHERE id > 100;
CREATE TABLE aggregated (six INT, n INT, k VARCHAR(4), ids INT, none INT, top INT);
INSERT INTO aggregated VALUES (@six, @rows, @k, @ids, @none, @top);
SET sql_mode = DEFAULT;

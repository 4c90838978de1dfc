-- Every column type through strict-mode conversion.
-- (MariaDB truncates excess fractional seconds where MySQL and TiDB round: kept exact here.)
CREATE TABLE typed (
    id BIGINT UNSIGNED PRIMARY KEY,
    ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, i INT, bi BIGINT,
    d DECIMAL(10, 3), f FLOAT, db DOUBLE,
    dt DATE, dtm DATETIME(3), ts TIMESTAMP(6) NULL, tm TIME(2), y YEAR,
    e ENUM('red', 'green', 'blue'), s SET('a', 'b', 'c'), bt BIT(10),
    ch CHAR(5), vc VARCHAR(20), bn BINARY(4), vb VARBINARY(8),
    tx TEXT, bl BLOB, b BOOLEAN
);
INSERT INTO typed VALUES
    (1, -128, 65535, 8388607, -2147483648, 9223372036854775807,
     1234567.8915, 3.14159, 2.718281828459045,
     '2024-02-29', '2024-02-29 23:59:59.123', '2038-01-19 03:14:07.999999', '838:59:59', 2155,
     'green', 'c,a', b'1111111111',
     'ab  ', 'trailing  ', 'xy', x'00ff', 'text é', x'0001ff', TRUE),
    (18446744073709551615, 127, 0, -8388608, 2147483647, -9223372036854775808,
     -0.0005, -1e-10, 1e300,
     '1000-01-01', '1000-01-01 00:00:00', '1970-01-01 00:00:01', '-12:34:56.78', 1901,
     2, 7, 0,
     '', '', '', '', '', '', FALSE),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO typed (id, i, d, dt, y, e, s) VALUES (4, '42', '1.0005', 20240101, 69, 'blue', 'b,b');
INSERT INTO typed (id, db, f, vc) VALUES (5, 1.5e-7, 0.1, 12.50);
UPDATE typed SET i = i + 1, d = d / 3, y = 70 WHERE id = 4;

package audit

import (
	"bytes"
	"context"
	"fmt"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options name an S3-compatible bucket and how to reach it.
type S3Options struct {
	// Endpoint is host[:port], without a scheme.
	Endpoint string
	Bucket   string
	// Region is the bucket's region; "" asks the server.
	Region    string
	AccessKey string
	SecretKey string
	// Insecure speaks plain HTTP instead of HTTPS (a loopback test
	// server, or a gateway on the same host).
	Insecure bool
}

// S3Store is an ObjectStore on an S3-compatible bucket.
type S3Store struct {
	client   *minio.Client
	bucket   string
	insecure bool
}

// NewS3Store returns a store on the bucket; it does not reach the server
// until the first Put.
func NewS3Store(opt S3Options) (*S3Store, error) {
	c, err := minio.New(opt.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(opt.AccessKey, opt.SecretKey, ""),
		Secure: !opt.Insecure,
		Region: opt.Region,
		// The archive retries a failed batch itself, every batch
		// interval; a few quick retries here ride out a blip.
		MaxRetries: 3,
	})
	if err != nil {
		return nil, fmt.Errorf("audit s3 %s: %w", opt.Endpoint, err)
	}
	return &S3Store{client: c, bucket: opt.Bucket, insecure: opt.Insecure}, nil
}

// Put writes body, gzipped JSON lines, with Content-Encoding gzip so that
// S3 clients decompress it transparently (DDR-28).
func (s *S3Store) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{
		ContentType:     "application/x-ndjson",
		ContentEncoding: "gzip",
		SendContentMd5:  true,
		// Over plain HTTP the client would otherwise sign the body in
		// aws-chunked streaming form, and some servers (versitygw) keep
		// "aws-chunked,gzip" as the stored Content-Encoding; a batch is
		// small and whole in memory, and Content-MD5 guards it.
		DisableContentSha256: s.insecure,
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}
